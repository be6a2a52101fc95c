package fleetbot_test

import data.fleetbot

fleet_with(pool) := {"fleet": {"projects": [{"clusters": [{"target": "a/c", "file": "f.yaml", "gpu_pool": pool}]}]}}

test_an_h200_pool_on_demand_is_denied if {
	some d in fleetbot.deny with input as fleet_with({"count": 2, "platform": "gpu-h200-sxm", "reserved": false, "line": 7})
	d.target == "a/c"
	d.line == 7
}

test_a_reserved_b200_pool_is_allowed if {
	count(fleetbot.deny) == 0 with input as fleet_with({"count": 2, "platform": "gpu-b200-sxm", "reserved": true, "line": 7})
}

test_an_l40s_pool_on_demand_is_allowed if {
	count(fleetbot.deny) == 0 with input as fleet_with({"count": 2, "platform": "gpu-l40s-a", "reserved": false, "line": 7})
}
