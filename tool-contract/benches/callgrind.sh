#!/usr/bin/env bash
# Instructions per run of each case of `benches/callgrind.rs`, counted by callgrind: each case
# runs twice, LOW and HIGH times after the same setup, and the difference is divided by
# HIGH - LOW, so setup and process start cancel out. Counts do not move with the machine's
# load; timings do.
#
#   tool-contract/benches/callgrind.sh [LOW HIGH]        (default 20 220)
#   tool-contract/benches/callgrind.sh mcp [LOW HIGH]    the `mcp` bench's cases
set -euo pipefail
cd "$(dirname "$0")/../.."
bench=callgrind
features=()
if [ "${1:-}" = mcp ]; then
    bench=mcp
    features=(--features mcp-http)
    shift
fi
low=${1:-20}
high=${2:-220}

binary=$(cargo bench -p tool-contract "${features[@]}" --bench "$bench" --no-run \
    --message-format=json 2>/dev/null \
    | grep -o '"executable":"[^"]*/'"$bench"'-[^"]*"' | tail -1 | cut -d'"' -f4)
if [ -z "$binary" ]; then
    echo "the $bench bench did not build" >&2
    exit 1
fi

count() { # CASE TIMES -> total instructions
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$binary" "$1" "$2" >/dev/null 2>&1
    grep '^summary:' "$out" | awk '{print $2}'
    rm -f "$out"
}

if [ "$bench" = mcp ]; then
    for case in dispatch rmcp_fixed_answer mcp_server rmcp_dispatching_fixed_answer \
        rmcp_fixed_answer_2026_07_28 \
        mcp_server_2026_07_28 http_rmcp_fixed_answer_2026_07_28 http_mcp_server_2026_07_28; do
        a=$(count "$case" "$low")
        b=$(count "$case" "$high")
        printf '%-36s %12d instructions per call\n' "$case" $(((b - a) / (high - low)))
    done
    exit 0
fi

cases=(validate_tool_contract validate_serde_json validate_sonic_rs validate_simd_json
    validate_value_jsonschema borrowed_tool_contract borrowed_sonic_rs borrowed_simd_json)
for size in 1KiB 16KiB 64KiB 256KiB 1MiB; do
    for kind in path_tool_contract path_floor path_off_the_shelf; do
        cases+=("${kind}_${size}")
    done
done
for case in "${cases[@]}"; do
    if [[ $case == *256KiB || $case == *1MiB ]]; then
        l=1; h=6
    elif [[ $case == *16KiB || $case == *64KiB ]]; then
        l=2; h=22
    else
        l=$low; h=$high
    fi
    a=$(count "$case" "$l")
    b=$(count "$case" "$h")
    printf '%-36s %12d instructions per run\n' "$case" $(((b - a) / (h - l)))
done
