package fleetbot_test

import data.fleetbot

project(gpus) := {"key": "train", "file": "fleets/a.yaml", "line": 9, "gpus": gpus}

test_64_gpus_are_allowed if {
	count(fleetbot.deny) == 0 with input as {"fleet": {"projects": [project(64)]}}
}

test_65_gpus_are_denied_on_the_project_line if {
	some d in fleetbot.deny with input as {"fleet": {"projects": [project(65)]}}
	d.line == 9
	d.msg == "project train asks for 65 GPUs; a project may hold 64"
}
