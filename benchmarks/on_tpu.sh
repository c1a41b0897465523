#!/bin/bash
# The measurements of the grading accelerator, one step per device call, every figure in $OUT.
# Run on the TPU machine from the project's root with .whl-tpu/ carried (shared/tpu/README.md):
#   bash benchmarks/on_tpu.sh course     # the solutions graded whole, hidden: score, time, leases
#   bash benchmarks/on_tpu.sh survey     # sizes of the named exercises, then the tolerance survey
#   bash benchmarks/on_tpu.sh verdicts   # speed verdicts of the reference and of twice its work
#                                        # (GRADINGS=5 of each; EXERCISES=a.b,c.d; VERSIONS=...)
#   bash benchmarks/on_tpu.sh compiles   # what compiling costs there (compile_probe.py, then the
#                                        # survey at the specs' sizes: each program's compile time)
#   bash benchmarks/on_tpu.sh digest     # what the outputs' digest costs, XLA's loop and the
#                                        # Pallas kernel (digest_cost.py; SHAPES=dropout,... to pick;
#                                        # GEOMETRIES=256/8/1,... sweeps the kernel's geometry)
#   bash benchmarks/on_tpu.sh stubs      # the stubs (exercises/) graded whole, hidden: zero
#                                        # points everywhere (TOPICS=a,b to pick)
#   bash benchmarks/on_tpu.sh written    # the crafted right answers written differently
#                                        # (tests/submissions/<topic>__written_differently.py),
#                                        # their topics graded whole, hidden: any point lost is false
# With JAXLINGS_DIGEST_KERNEL=0 the course and verdicts steps commit without the digest's kernel,
# with 2 with its folding stages as a kernel too.
# With TOPICS=a,b the course step grades those topics only; with PROFILE=1 every Python process
# is sampled (benchmarks/sampler/sitecustomize.py: $OUT/samples/<pid>.txt).
# Each line of progress goes to a file in $OUT as it is said: a step cut at its limit keeps them.
set -u
step=${1:?a step: course, survey, verdicts, compiles, digest, stubs or written}
limit=${2:-500}
OUT=${OUT:?the output folder of the device machine}
if [ -d /tmp/site ]; then  # a warm machine keeps /tmp between calls: the wheels are there already
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site:/tmp/site2:$PWD
else
  source .whl-tpu/install.sh > "$OUT/install.log" 2>&1
  # netket imports einops, which shared/tpu/wheels.sh does not fetch: carried where it was added
  # (`pip download --no-deps -d .whl-tpu einops`), else from the machine's own index
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --only-binary=:all: --no-deps --no-cache-dir \
    --find-links .whl-tpu --index-url file:///opt/pypi/simple --target /tmp/site2 einops >> "$OUT/install.log" 2>&1
fi
python3 -c 'import jax, netket, flax, optax, jaxlings; print("on", jax.devices()[0].device_kind, "jax", jax.__version__)' \
  >> "$OUT/install.log" 2>&1 || { tail -c 3000 "$OUT/install.log"; exit 1; }
date -u +"start %T" > "$OUT/$step.times"
if [ -n "${PROFILE:-}" ]; then  # every Python process sampled (benchmarks/sampler): where the time goes
  export PROFILE_SAMPLES=$OUT/samples PYTHONPATH=$PWD/benchmarks/sampler:$PYTHONPATH
fi
case $step in
  course)
    # the engine's log (each check's start and seconds) in course.steps: where a long run spends its time
    timeout "$limit" python3 -u -c 'import logging, sys; from jaxlings.cli import main
logging.basicConfig(filename=sys.argv.pop(1), level=logging.INFO, format="%(relativeCreated)8.0f %(message)s")
sys.argv[0] = "grade"; main()' "$OUT/course.steps" grade solutions --device tpu --sandbox off --jobs 8 \
      ${TOPICS:+-t ${TOPICS//,/ -t }} --json "$OUT/course.json" > "$OUT/course.log" 2>&1 ;;
  survey)
    timeout "$limit" python3 -u benchmarks/device_survey.py --out "$OUT/survey" --skip opens \
      --exercises "${EXERCISES:-static_args.cached_solve,static_args.standardize,training.train_step}" \
      --reps 5 --deadline $((limit / 2)) > "$OUT/survey.out" 2>&1 ;;
  verdicts)
    timeout "$limit" python3 -u benchmarks/device_check.py --device tpu --gradings "${GRADINGS:-5}" \
      --versions "${VERSIONS:-reference,x2}" ${EXERCISES:+--exercises ${EXERCISES//,/ }} --no-course \
      --json "$OUT/verdicts.json" > "$OUT/verdicts.log" 2>&1 ;;
  compiles)
    timeout $((limit * 3 / 5)) python3 -u benchmarks/compile_probe.py --out "$OUT/probe.jsonl" --partitionable both \
      ${ROWS:+--rows $ROWS} > "$OUT/compiles.log" 2>&1
    timeout $((limit * 2 / 5)) python3 -u benchmarks/device_survey.py --out "$OUT/survey" --skip opens,tolerance \
      --sizes spec --reps 3 ${EXERCISES:+--exercises $EXERCISES} > "$OUT/compiles.out" 2>&1 ;;
  digest)
    timeout "$limit" python3 -u benchmarks/digest_cost.py --out "$OUT/digest.jsonl" \
      ${SHAPES:+--shapes $SHAPES} ${GEOMETRIES:+--geometries $GEOMETRIES} ${SKIP:+--skip $SKIP} \
      > "$OUT/digest.out" 2>&1 ;;
  stubs)
    timeout "$limit" python3 -u -m jaxlings grade exercises --device tpu --sandbox off --jobs 8 \
      ${TOPICS:+-t ${TOPICS//,/ -t }} --json "$OUT/stubs.json" > "$OUT/stubs.log" 2>&1 ;;
  written)
    topics=${TOPICS:-jit_basics,prng,at_updates,static_args}
    python3 -c 'import sys; sys.path.insert(0, "tests")
from pathlib import Path
from helpers.crafted import crafted_source
folder = Path(sys.argv[1]); folder.mkdir(parents=True, exist_ok=True)
for topic in sys.argv[2].split(","):
    (folder / f"{topic}.py").write_text(crafted_source(f"{topic}__written_differently"))' /tmp/written "$topics"
    timeout "$limit" python3 -u -m jaxlings grade /tmp/written --device tpu --sandbox off --jobs 8 -t ${topics//,/ -t } \
      --json "$OUT/written.json" > "$OUT/written.log" 2>&1 ;;
  *) echo "unknown step: $step"; exit 2 ;;
esac
rc=$?
date -u +"end %T rc $rc" >> "$OUT/$step.times"
tail -c 3000 "$OUT"/$step*.log "$OUT"/$step*.out 2>/dev/null
exit $rc
