# H200 and B200 pools run on reserved capacity (a capacity block group), never on demand.
package fleetbot

reserved_platform(platform) if contains(platform, "h200")

reserved_platform(platform) if contains(platform, "b200")

deny contains {"msg": msg, "file": c.file, "line": c.gpu_pool.line, "target": c.target} if {
	some p in input.fleet.projects
	some c in p.clusters
	c.gpu_pool.count > 0
	reserved_platform(c.gpu_pool.platform)
	not c.gpu_pool.reserved
	msg := sprintf("%s: %s pools use reserved capacity; name a capacity_block_group", [c.target, c.gpu_pool.platform])
}
