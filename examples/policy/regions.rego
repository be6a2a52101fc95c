# Only eu-north1 and us-central1.
package fleetbot

allowed_regions := {"eu-north1", "us-central1"}

deny contains {"msg": msg, "file": c.file, "line": c.line, "target": c.target} if {
	some p in input.fleet.projects
	some c in p.clusters
	not c.region in allowed_regions
	msg := sprintf("%s is in %s; fleets run in eu-north1 and us-central1 only", [c.target, c.region])
}
