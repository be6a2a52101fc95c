// A Probot app that only acknowledges: it registers handlers for the events fleetbot acts on
// and does nothing in them, so what scripts/load-side-by-side.sh measures is Probot's own
// intake (HTTP, signature check, JSON, dispatch) beside fleetbot's.
//
// Run with Probot's own server (`run`, what `probot run` does), configured from the
// environment as any Probot app is: APP_ID, PRIVATE_KEY_PATH, WEBHOOK_SECRET, HOST, PORT,
// LOG_LEVEL. Webhooks are at /api/github/webhooks, readiness at /ping. No handler calls
// GitHub, so the installation token Probot would mint lazily is never asked for.
"use strict";

const { run } = require("probot");

/** @param {import("probot").Probot} app */
function ack(app) {
  app.on(["pull_request", "issue_comment", "check_run"], async () => {});
}

module.exports = ack;

if (require.main === module) {
  run(ack).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
