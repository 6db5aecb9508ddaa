#!/usr/bin/env bash
# Maddison's rank experiment on this project's 2-core CPU (issue 15, item 3): the commands that made the README's
# tables (Playing: the rank experiment). Each step resumes or is skipped when its output is there.
#   bash scripts/rank_experiment.sh            # everything (about 1.5 h on an idle 2-core machine)
set -euo pipefail
cd "$(dirname "$0")/.."
KGS=${KGS:-../shared/data/kgs}
DATA=data/kgs_rank_gonn
GAMES=${GAMES:-200}

[ -f "$DATA/manifest.json" ] || kifunet build "$KGS/KGS-2006-19-10388-.tar.gz" "$KGS/KGS-2015-19-8133-.tar.gz" \
  --out "$DATA" --features gonn --no-handicap --split train:2006 --split test:2015 --workers 2
# the same data, seed and positions; only the rank input differs (train/configs/rank_experiment.py)
kifunet train --config train/configs/rank_experiment.py --workdir runs/rank_base --config.dataset="$DATA"
kifunet train --config train/configs/rank_experiment.py --workdir runs/rank_cond --config.dataset="$DATA" \
  --config.model.rank_embedding=True
# top-1 on the same 50,000 test positions, the conditioned net told each rank in turn
mkdir -p runs/rank_eval
kifunet eval --checkpoint runs/rank_base --data "$DATA" --limit 50000 --no-breakdowns --out runs/rank_eval/base.json
kifunet eval --checkpoint runs/rank_cond --data "$DATA" --limit 50000 --no-breakdowns --out runs/rank_eval/cond.json
for r in 1d 2d 3d 4d 5d 6d 7d 8d 9d; do
  kifunet eval --checkpoint runs/rank_cond --data "$DATA" --limit 50000 --as-rank "$r" --no-breakdowns \
    --out "runs/rank_eval/cond_as_$r.json"
done
# the conditioned net told 1d, 5d, 9d against the baseline; both sample (GoNN's schedule), colours alternate
kifunet match --engine "kifunet gtp --checkpoint runs/rank_cond --sample" \
  --opponent "kifunet gtp --checkpoint runs/rank_base --sample" --rank-experiment 1d,5d,9d \
  --games "$GAMES" --parallel 2 --out runs/match/rank
