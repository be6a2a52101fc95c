# Nothing in a production fleet (`fleets/prod*`) is deleted, replaced or shrunk by a pull
# request: such a change goes through the platform team.
package fleetbot

deny contains {"msg": msg, "file": input.fleet.file, "target": d.target} if {
	startswith(input.fleet.file, "fleets/prod")
	some d in input.plan.destructive
	msg := sprintf("%s: %s %s %s (%s); production fleets are not shrunk or deleted by a pull request", [d.target, d.action, d.resource, d.name, d.why])
}
