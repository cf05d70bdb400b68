#!/usr/bin/env bash
# An [[alert.exec]] program: llmwatch runs it with the alert on stdin as JSON:
#   {"schema":"llmwatch.alert/1","key":"job:tr11/hung","state":"firing"|"resolved",
#    "severity":"info"|"warning"|"critical"|"unknown","subject":"tr11","summary":"...",
#    "evidence":["log lines",...],"actions":["cancel: done — scancel 3_1",...],
#    "ts":1795311385.2,"host":"mgmt-1","notice":false}
# ("notice": true for a message told once that no "resolved" will follow: a near miss.)
# and LLMWATCH_KEY, LLMWATCH_STATE, LLMWATCH_SEVERITY, LLMWATCH_SUBJECT, LLMWATCH_SUMMARY set.
# llmwatch's own environment is not passed on (it may hold secrets): configuration comes as
# arguments. A non-zero exit or a timeout counts as a failed delivery. This one appends to
# the file named by its first argument.
set -eu
out=${1:-/tmp/llmwatch-alerts.jsonl}
{ cat; echo; } >>"$out"
