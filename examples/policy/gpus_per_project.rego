# No project holds more than 64 GPUs.
package fleetbot

max_project_gpus := 64

deny contains {"msg": msg, "file": p.file, "line": p.line} if {
	some p in input.fleet.projects
	p.gpus > max_project_gpus
	msg := sprintf("project %s asks for %d GPUs; a project may hold %d", [p.key, p.gpus, max_project_gpus])
}
