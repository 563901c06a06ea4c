#!/bin/sh
# Runs "$@" (exec: same pid) so that it is sent SIGTERM when the process that
# started it dies, however it dies. npm runs a script as `sh -c "<script>"`;
# the root scripts exec this file, so npm is the parent here. When npm is
# killed (SIGKILL, the OOM killer), its child is not told and would keep
# serving its port as an orphan: the kernel's parent-death signal
# (prctl PR_SET_PDEATHSIG, set by util-linux's setpriv and kept across exec)
# turns npm's death into a SIGTERM, which the services and the supervisor
# (scripts/start-all.mjs) answer by shutting down gracefully.
#
# SVC_PARENT_PID is npm's pid: if npm died before the signal was armed, the
# process finds itself re-parented at start and stops (scripts/run-service.mjs,
# scripts/start-all.mjs). Without setpriv (macOS, Alpine without util-linux)
# the command runs as before, untied.
SVC_PARENT_PID=$PPID
export SVC_PARENT_PID
if setpriv --pdeathsig TERM true 2>/dev/null; then
  exec setpriv --pdeathsig TERM "$@"
fi
exec "$@"
