package fleetbot_test

import data.fleetbot

pool(preemptible) := {"fleet": {"projects": [{"clusters": [{"target": "a/c", "file": "f.yaml", "gpu_pool": {"preemptible": preemptible, "gpus": 8, "line": 4}}]}]}}

test_a_preemptible_pool_warns_and_does_not_deny if {
	count(fleetbot.warn) == 1 with input as pool(true)
	count(fleetbot.deny) == 0 with input as pool(true)
}

test_an_ordinary_pool_is_quiet if {
	count(fleetbot.warn) == 0 with input as pool(false)
}
