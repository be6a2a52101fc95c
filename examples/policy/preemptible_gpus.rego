# A preemptible GPU pool is allowed, but the reviewer is told (a warning, not a denial).
package fleetbot

warn contains {"msg": msg, "file": c.file, "line": c.gpu_pool.line, "target": c.target} if {
	some p in input.fleet.projects
	some c in p.clusters
	c.gpu_pool.preemptible
	msg := sprintf("%s: its %d GPUs are preemptible and may be taken back at any time", [c.target, c.gpu_pool.gpus])
}
