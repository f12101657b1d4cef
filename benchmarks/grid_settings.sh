#!/usr/bin/env bash
# Issue 11's comparison of TEM-t settings: each setting × SEEDS seeds trained on the `small`
# preset (8x8), evaluated on held-out 11x11 worlds (1,500-step walks: loop closure, zero-shot
# and memories per node), recorded on 20x20 worlds (so a map holds several grid periods) and
# analysed. One `hippo-rep sweep` folder per setting under OUT; `hippo_rep.open_sweep` reads
# each, and benchmarks/grid_settings_table.py prints the table.
#
#   bash benchmarks/grid_settings.sh OUT [SEEDS] [SETTING ...]
set -euo pipefail
out=${1:?usage: grid_settings.sh OUT [SEEDS] [SETTING ...]}
seeds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
declare -A SETS=(
  # today's default: orthogonal W_a = exp(S - S^T), linear σ, g rescaled to unit RMS
  [orth_linear]=""
  # the paper's free W_a, linear σ (g still rescaled)
  [free_linear]="model.transition_param=free"
  # free W_a, ReLU σ (g still rescaled)
  [free_relu]="model.transition_param=free model.transition_activation=relu"
  # the paper's setting in full: free W_a, ReLU σ, no rescaling (e = σ(e W_a)), values X·W_x
  # with a learned readout, L2 on g live (loss 5), and opposite moves pulled to inverses
  [paper_relu]="model.transition_param=free model.transition_activation=relu model.g_norm=none model.readout=mlp train.loss_l2_g=0.01 train.loss_inverse=0.1"
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(orth_linear free_linear free_relu paper_relu)
for name in "${names[@]}"; do
  [ -n "${SETS[$name]+x}" ] || { echo "unknown setting $name; known: ${!SETS[*]}" >&2; exit 2; }
  args=()
  for kv in ${SETS[$name]}; do args+=(--set "$kv"); done
  hippo-rep sweep small --seeds "$seeds" --out "$out/$name" "${args[@]}" \
    --eval-world square:11 --eval-steps 1500 --eval-envs 16 \
    --record-world square:20 --record-steps 2000 --record-envs 8 --shuffles 20 --no-progress
done
