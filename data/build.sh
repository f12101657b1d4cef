#!/usr/bin/env bash
# Rebuilds every file in data/ (data/README.md lists them with their SHA-256).
# Run from the repository root: bash data/build.sh   (about 35 min on 2 cores, training included;
# a stage whose run folder already holds a checkpoint is not trained again).
set -euo pipefail
RUNS=${RUNS:-runs}
FIGURES=${FIGURES:-figures}

# 1. TEM-t on 8x8 worlds (small preset, seed 0; the same run as `hippo-rep demo`'s TEM-t).
[ -f "$RUNS/small/checkpoint.pt" ] || hippo-rep train --config small --out "$RUNS/small" --no-progress
# 2. The paper preset (10x10 and 11x11 worlds, walks of 360 steps) starting from it; the
#    schedule is set for 2,000 iterations and the run stops after iteration 400.
[ -f "$RUNS/paper/checkpoint.pt" ] || hippo-rep train --config paper \
    --set train.init_from="$RUNS/small/checkpoint.pt" --set train.iterations=2000 \
    --set train.eval_every=25 --stop-at 400 --out "$RUNS/paper" --no-progress
# 3. The sinusoidal baseline on the same worlds.
[ -f "$RUNS/paper_baseline/checkpoint.pt" ] || hippo-rep train --config paper \
    --set model.kind=sinusoidal --set train.lr=1e-3 --set train.iterations=200 \
    --out "$RUNS/paper_baseline" --no-progress

# 4. add-if-novel's write threshold calibrated between revisits and new places on the training
#    worlds (the weights are the run's own; see hippo_rep.training.calibrate)
hippo-rep calibrate "$RUNS/paper/checkpoint.pt" --out data/temt_paper.pt --overwrite
hippo-rep evaluate data/temt_paper.pt --json data/eval.json --overwrite
# the add-if-novel bar: memories per distinct node after 1,500 steps on held-out 11x11 worlds
hippo-rep evaluate data/temt_paper.pt --world square:11 --steps 1500 --envs 16 \
    --json data/eval_11x11_1500.json --overwrite
hippo-rep evaluate "$RUNS/paper_baseline/checkpoint.pt" --json data/eval_baseline.json --overwrite
# 16x16 worlds: a map holds more than two periods of the positional units (wavelength ~7.5)
hippo-rep record data/temt_paper.pt --out data/recording.nc --envs 6 --steps 1200 \
    --world square:16 --overwrite
hippo-rep analyse data/recording.nc --out data/analysis.nc --shuffles 50 --overwrite
hippo-rep delay data/temt_paper.pt --out data/delay.nc --overwrite
# The PassKey sweep (TransformerFAM) is trained separately (about 40 min on 2 cores):
#   hippo-rep passkey sweep --out runs/passkey_sweep --samples 64 \
#       --set train.steps=400 --set train.batch_size=16 --set train.filler_max=64
[ -f data/passkey/sweep.json ] || { mkdir -p data/passkey; cp runs/passkey_sweep/sweep.json data/passkey/; }
# TEM and TEM-t learning speed (the TEM-t paper's Fig. 4), 9 min of training each (about
# 20 min with evaluations on 2 busy cores; wall-clock seconds depend on the machine's load)
# (these runs, from sessions 5-8, are TEM's per-walk regime counting every step:
# PER_WALK pins it, the tem preset's defaults before session 9)
PER_WALK=(--tem-set train.step_every_chunk=false --tem-set train.tem.loss_on=all)
[ -f data/learning_speed.json ] || python benchmarks/bench_tem_vs_temt.py \
    --learning data/learning_speed.json --budget-s 1500 --points 12 --eval-envs 16 \
    "${PER_WALK[@]}"
# the same with torch_tem's own schedule for TEM, TEM-t for 900 s, every run keeping its
# checkpoints (resumable). The budgets are upper bounds: the runs were stopped by hand and
# --resume continues them; a JSON whose runs are all past their budget is rewritten as is.
#   ls9r: TEM as torch_tem trains it (the tem preset: update per 20-step chunk, loss at
#         revisits), stopped at update 8,780 (6,453 s)
#   ls8:  TEM per walk, loss at every step (sessions 7-9), stopped at update 1,571 (11,250 s)
#   ls8c: TEM per chunk, loss at every step, stopped at update 6,930 (4,752 s)
#   ls9t: TEM-t per chunk beside ls9r's TEM (900 s), at the preset's lr 9.4e-4 (stays at
#         chance); lr3e-4 / lr1e-4: the same at lr 3e-4 / 1e-4 (session 10; both learn)
#   temlr3e-4: TEM as ls9r at lr 3e-4 (session 10, 3,300 s)
# (the shipped runs were started from copies of ls8's JSON so that all share one TEM-t run;
# this sequence shares it the same way), merged: the figure's input. Seed 1 (ls9r_s1, TEM-t
# and TEM retrained, TEM stopped at update 3,740) is shipped beside it.
if [ ! -f data/learning_speed_torch_tem.json ]; then
    common=(--temt-budget-s 900 --eval-envs 16 --tem-schedule torch_tem)
    B=benchmarks/bench_tem_vs_temt.py
    python $B --learning "$RUNS/ls8/learning.json" --keep-dir "$RUNS/ls8" --budget-s 11000 \
        --points 120 "${common[@]}" "${PER_WALK[@]}"
    for d in ls8c ls9r ls9t; do
        mkdir -p "$RUNS/$d" && cp "$RUNS/ls8/learning.json" "$RUNS/$d/learning.json"
    done
    python $B --learning "$RUNS/ls8c/learning.json" --keep-dir "$RUNS/ls8c" --resume \
        --fresh tem --budget-s 4750 --points 120 "${common[@]}" \
        --tem-set train.step_every_chunk=true --tem-set train.tem.loss_on=all
    python $B --learning "$RUNS/ls9r/learning.json" --keep-dir "$RUNS/ls9r" --resume \
        --fresh tem --budget-s 6450 --points 100 "${common[@]}" \
        --tem-set train.step_every_chunk=true --tem-set train.tem.loss_on=revisits
    cp "$RUNS/ls9r/learning.json" "$RUNS/ls9t/learning.json"
    python $B --learning "$RUNS/ls9t/learning.json" --keep-dir "$RUNS/ls9t" --resume \
        --fresh temt --budget-s 6450 --points 60 "${common[@]}" \
        --tem-set train.step_every_chunk=true --tem-set train.tem.loss_on=revisits \
        --temt-set train.step_every_chunk=true
    python $B --merge "$RUNS/ls9r/learning.json" "$RUNS/ls8/learning.json" \
        --merge-label tem_per_walk --learning "$RUNS/m1.json"
    python $B --merge "$RUNS/m1.json" "$RUNS/ls8c/learning.json" --merge-label tem_per_chunk \
        --learning "$RUNS/m2.json"
    for lr in 3e-4 1e-4; do
        cp "$RUNS/ls9r/learning.json" "$RUNS/lr$lr.json"
        python $B --learning "$RUNS/lr$lr.json" --keep-dir "$RUNS/lr$lr" --resume \
            --fresh temt --budget-s 6000 --points 60 "${common[@]}" \
            --tem-set train.step_every_chunk=true --tem-set train.tem.loss_on=revisits \
            --temt-set train.step_every_chunk=true --temt-set train.lr=$lr
    done
    python $B --merge "$RUNS/m2.json" "$RUNS/ls9t/learning.json" --merge-label temt_per_chunk \
        --merge-model temt --learning "$RUNS/m3.json"
    python $B --merge "$RUNS/m3.json" "$RUNS/lr3e-4.json" --merge-label temt_per_chunk_lr3e-4 \
        --merge-model temt --learning "$RUNS/m4.json"
    python $B --merge "$RUNS/m4.json" "$RUNS/lr1e-4.json" --merge-label temt_per_chunk_lr1e-4 \
        --merge-model temt --learning "$RUNS/m5.json"
    # TEM itself at lr 3e-4 (session 10), from a copy of ls9r's JSON
    cp "$RUNS/ls9r/learning.json" "$RUNS/temlr3e-4.json"
    python $B --learning "$RUNS/temlr3e-4.json" --keep-dir "$RUNS/temlr3e-4" --resume \
        --fresh tem --budget-s 3300 --points 60 "${common[@]}" \
        --tem-set train.step_every_chunk=true --tem-set train.tem.loss_on=revisits \
        --tem-set train.lr=3e-4
    python $B --merge "$RUNS/m5.json" "$RUNS/temlr3e-4.json" --merge-label tem_lr3e-4 \
        --learning data/learning_speed_torch_tem.json
fi
# seed 1: TEM-t and TEM retrained (TEM stopped at update 3,740), and TEM-t per chunk at lr 3e-4
if [ ! -f data/learning_speed_torch_tem_seed1.json ]; then
    s1=(--seed 1 --points 60 --temt-budget-s 900 --eval-envs 16 --tem-schedule torch_tem
        --tem-set train.step_every_chunk=true --tem-set train.tem.loss_on=revisits)
    python benchmarks/bench_tem_vs_temt.py --learning "$RUNS/ls9r_s1/learning.json" \
        --keep-dir "$RUNS/ls9r_s1" --budget-s 2890 "${s1[@]}"
    cp "$RUNS/ls9r_s1/learning.json" "$RUNS/s1lr3e-4.json"
    python benchmarks/bench_tem_vs_temt.py --learning "$RUNS/s1lr3e-4.json" \
        --keep-dir "$RUNS/s1lr3e-4" --resume --fresh temt --budget-s 2800 "${s1[@]}" \
        --temt-set train.step_every_chunk=true --temt-set train.lr=3e-4
    python benchmarks/bench_tem_vs_temt.py --merge "$RUNS/ls9r_s1/learning.json" \
        "$RUNS/s1lr3e-4.json" --merge-label temt_per_chunk_lr3e-4 --merge-model temt \
        --learning data/learning_speed_torch_tem_seed1.json
fi
# TEM with torch_tem's sizes and schedule on 5x5 worlds, 1,450 updates (about 2.5 h on 1
# thread; trained to 600, then resumed), shipped as weights only, and its evaluation
[ -f "$RUNS/tem_5x5/checkpoint.pt" ] || hippo-rep train --config tem \
    --set 'world.worlds=["square:5"]' --set train.threads=1 --set train.checkpoint_every=25 \
    --set train.eval_every=100 --set train.iterations=20000 --set train.log_every=10 \
    --set train.step_every_chunk=false --set train.tem.loss_on=all \
    --stop-at 1450 --out "$RUNS/tem_5x5" --no-progress
python -c "from hippo_rep.training.checkpoint import weights_only_copy as w; \
w('$RUNS/tem_5x5/checkpoint.pt', 'data/tem_5x5.pt')"
hippo-rep evaluate data/tem_5x5.pt --envs 16 --json data/tem_5x5_eval.json --overwrite
# TEM on 8x8 as torch_tem trains it: ls9r above (update 8,780; shipped in session 9), continued
# in session 10 from that weights-only copy (--continue-from: its iteration, schedules and
# walks; Adam's moments restart) to iteration 1,900 (update 19,000; stopped by hand there);
# weights only, its held-out metrics, its evaluation, and the analysis of a recording (4 envs
# x 1,200 steps of 8x8)
python -c "from hippo_rep.training.checkpoint import weights_only_copy as w; \
w('$RUNS/ls9r/tem/checkpoint.pt', '$RUNS/tem_8x8_s9.pt')"
[ -f "$RUNS/tem_cont/checkpoint.pt" ] || hippo-rep train --continue-from "$RUNS/tem_8x8_s9.pt" \
    --set train.eval_every=50 --set train.eval_envs=16 --set train.checkpoint_every=50 \
    --stop-at 1900 --out "$RUNS/tem_cont" --no-progress
python -c "from hippo_rep.training.checkpoint import weights_only_copy as w; \
w('$RUNS/tem_cont/checkpoint.pt', 'data/tem_8x8.pt')"
cp "$RUNS/tem_cont/metrics.csv" data/tem_8x8_metrics.csv
hippo-rep evaluate data/tem_8x8.pt --envs 16 --json data/tem_8x8_eval.json --overwrite
hippo-rep record data/tem_8x8.pt --out "$RUNS/tem_8x8_rec.nc" --envs 4 --steps 1200 \
    --world square:8 --overwrite
hippo-rep analyse "$RUNS/tem_8x8_rec.nc" --out data/tem_8x8_analysis.nc --shuffles 50 --overwrite
# FAM slots (F = 32) with a keep rule fitted on the training loss, 3 search seeds (about 4 min
# each on 2 busy cores), then the delay task beside full / window / hebbian on the same walks
for s in 0 1 2; do
    [ -f "$RUNS/keep_cem_s$s/checkpoint.pt" ] || python benchmarks/fam_keep_search.py \
        --seed "$s" --out "$RUNS/keep_cem_s$s/checkpoint.pt"
done
mkdir -p data/fam_keep_delay
for s in 0 1 2; do
    base=$([ "$s" = 0 ] && echo full,window,hebbian || echo "")
    python benchmarks/fam_slots_delay.py --checkpoint "$RUNS/keep_cem_s$s/checkpoint.pt" \
        --slots 32 --updates keep --variants "$base" --seeds 0,1,2 --delays 0,64,128,256,512 \
        --json "data/fam_keep_delay/s$s.json"
done
# The bounded FAM TEM-t: 48 keep slots (< the 100 places of a 10x10 world), keep rule fitted on
# the training loss (3 search seeds, about 2 min each), then the delay task beside full /
# window / hebbian on the same walks (walk seed = search seed) and the per-step cost benchmark
mkdir -p data/fam_keep48
for s in 0 1 2; do
    [ -f "$RUNS/keep48_s$s/checkpoint.pt" ] || python benchmarks/fam_keep_search.py \
        --slots 48 --seed "$s" --out "$RUNS/keep48_s$s/checkpoint.pt"
    hippo-rep delay "$RUNS/keep48_s$s/checkpoint.pt" --out "data/fam_keep48/s$s.nc" \
        --seed "$s" --delays 0,64,128,256,512 --overwrite
done
# the same for TEM-t trained with seeds 1 and 2 (small, then paper, as steps 1-2 and 4 above;
# about 10 min each), keep rule search seed 0, walk seed 0
for s in 1 2; do
    r="$RUNS/temt_seed$s"
    [ -f "$r/small/checkpoint.pt" ] || hippo-rep train --config small --set train.seed="$s" \
        --set train.threads=1 \
        --out "$r/small" --no-progress
    [ -f "$r/paper/checkpoint.pt" ] || hippo-rep train --config paper --set train.seed="$s" \
        --set train.threads=1 \
        --set train.init_from="$r/small/checkpoint.pt" --set train.iterations=2000 \
        --set train.eval_every=100 --stop-at 400 --out "$r/paper" --no-progress
    [ -f "$r/calibrated.pt" ] || hippo-rep calibrate "$r/paper/checkpoint.pt" --out "$r/calibrated.pt"
    [ -f "$r/keep48/checkpoint.pt" ] || python benchmarks/fam_keep_search.py \
        --checkpoint "$r/calibrated.pt" --slots 48 --seed 0 --out "$r/keep48/checkpoint.pt"
    hippo-rep delay "$r/keep48/checkpoint.pt" --out "data/fam_keep48/train_seed$s.nc" \
        --seed 0 --delays 0,64,128,256,512 --overwrite
done
python benchmarks/bench_memory_variants.py --checkpoint "$RUNS/keep48_s0/checkpoint.pt" \
    --json data/fam_keep48/cost.json
# The keep rule fitted on the task's own loss instead (--objective return: cross-entropy on the
# first return visits home of whole delay walks in the training worlds, D <= 512; about 3 min
# each): the paper weights with search seeds 0-2 and TEM-t seeds 1, 2 with search seed 0; the
# delay task on held-out walks (walk seed = search seed) and the per-step cost
mkdir -p data/fam_keep48_return
for spec in "paper_s0:data/temt_paper.pt:0" "paper_s1:data/temt_paper.pt:1" \
    "paper_s2:data/temt_paper.pt:2" "train_seed1:$RUNS/temt_seed1/calibrated.pt:0" \
    "train_seed2:$RUNS/temt_seed2/calibrated.pt:0"; do
    IFS=: read -r name ckpt s <<< "$spec"
    [ -f "$RUNS/ret48_$name/checkpoint.pt" ] || python benchmarks/fam_keep_search.py \
        --checkpoint "$ckpt" --slots 48 --seed "$s" --objective return --max-delay 512 \
        --out "$RUNS/ret48_$name/checkpoint.pt"
    hippo-rep delay "$RUNS/ret48_$name/checkpoint.pt" --out "data/fam_keep48_return/$name.nc" \
        --seed "$s" --delays 0,64,128,256,512 --overwrite
done
python benchmarks/bench_memory_variants.py --checkpoint "$RUNS/ret48_paper_s0/checkpoint.pt" \
    --repeats 7 --json data/fam_keep48_return/cost.json
hippo-rep figures data/analysis.nc --recording data/recording.nc --eval data/eval.json \
    --eval data/eval_baseline.json --passkey data/passkey \
    --delay data/fam_keep48_return/paper_s0.nc --delay data/fam_keep48_return/paper_s1.nc \
    --delay data/fam_keep48_return/paper_s2.nc --delay data/fam_keep48_return/train_seed1.nc \
    --delay data/fam_keep48_return/train_seed2.nc \
    --delay-cost data/fam_keep48_return/cost.json \
    --learning-speed data/learning_speed_torch_tem.json --out "$FIGURES"
(cd data && sha256sum temt_paper.pt eval.json eval_11x11_1500.json eval_baseline.json \
    recording.nc analysis.nc delay.nc passkey/sweep.json learning_speed.json \
    learning_speed_torch_tem.json \
    fam_keep_delay/s0.json fam_keep_delay/s1.json fam_keep_delay/s2.json \
    fam_keep48/s0.nc fam_keep48/s1.nc fam_keep48/s2.nc fam_keep48/train_seed1.nc \
    fam_keep48/train_seed2.nc fam_keep48/cost.json fam_keep48_return/paper_s0.nc \
    fam_keep48_return/paper_s1.nc fam_keep48_return/paper_s2.nc \
    fam_keep48_return/train_seed1.nc fam_keep48_return/train_seed2.nc \
    fam_keep48_return/cost.json tem_5x5.pt tem_5x5_eval.json \
    learning_speed_torch_tem_seed1.json tem_8x8.pt tem_8x8_eval.json > SHA256SUMS)
du -ch data/temt_paper.pt data/tem_5x5.pt data/tem_8x8.pt data/*.json data/*.nc data/passkey/sweep.json | tail -n 1
