package fleetbot_test

import data.fleetbot

shrink := {"target": "a/train", "resource": "node-group", "name": "gpu", "action": "update", "why": "shrinks from 4 to 2 nodes"}

test_a_shrink_in_prod_is_denied if {
	some d in fleetbot.deny with input as {"fleet": {"file": "fleets/prod.yaml", "projects": []}, "plan": {"destructive": [shrink]}}
	d.target == "a/train"
}

test_a_shrink_in_staging_is_allowed if {
	count(fleetbot.deny) == 0 with input as {"fleet": {"file": "fleets/staging.yaml", "projects": []}, "plan": {"destructive": [shrink]}}
}

test_prod_without_a_plan_is_allowed if {
	count(fleetbot.deny) == 0 with input as {"fleet": {"file": "fleets/prod.yaml", "projects": []}, "plan": null}
}
