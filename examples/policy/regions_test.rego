package fleetbot_test

import data.fleetbot

in_region(r) := {"fleet": {"projects": [{"clusters": [{"target": "a/c", "file": "f.yaml", "line": 3, "region": r}]}]}}

test_eu_north1_is_allowed if {
	count(fleetbot.deny) == 0 with input as in_region("eu-north1")
}

test_eu_west1_is_denied if {
	some d in fleetbot.deny with input as in_region("eu-west1")
	d.msg == "a/c is in eu-west1; fleets run in eu-north1 and us-central1 only"
}

test_us_central1_is_allowed if {
	count(fleetbot.deny) == 0 with input as in_region("us-central1")
}
