#!/usr/bin/env bash
# sanitize.sh FUSEC OUTDIR - session 16's sanitize.sh (memcheck, racecheck, the host's values)
# over this session's programs, sanitize/ here.
here=$(dirname "$0")
exec bash "$here/../gpu-2026-11-28-session16/sanitize.sh" "$1" "$2" "$here/sanitize"
