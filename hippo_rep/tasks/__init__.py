"""Sequence tasks beyond random walks in graph worlds (PassKey retrieval, …).

The PassKey sweep's names live here, free of torch, so that the command line can list them
without importing the models.
"""

#: The long-delay loop-closure task's world (:mod:`hippo_rep.tasks.delay`): larger than the
#: 8x8 training worlds so the excursion can stay away.
DELAY_DEFAULT_WORLD = "square:10"
#: Its excursion lengths D, in steps.
DELAY_DEFAULT_DELAYS = (0, 16, 32, 64, 128, 256, 512)
#: Its walks per delay.
DELAY_DEFAULT_ENVS = 32
#: Its memory variants, evaluated from one checkpoint's weights.
DELAY_DEFAULT_VARIANTS = ("full", "window", "fam", "hebbian")

#: The PassKey sweep's named variants: model settings over the base config. FAM and SUM keep
#: one memory segment (M = 1), so they differ from BSWA M1 only by their feedback slots.
PASSKEY_VARIANTS: dict[str, dict] = {
    "bswa_m1": {"variant": "bswa", "n_mem": 1},
    "bswa_m2": {"variant": "bswa", "n_mem": 2},
    "bswa_m4": {"variant": "bswa", "n_mem": 4},
    "fm1": {"variant": "fm", "n_mem": 1},
    "fm2": {"variant": "fm", "n_mem": 2},
    "fm4": {"variant": "fm", "n_mem": 4},
    "sum": {"variant": "sum", "n_mem": 1, "n_fam": 4},
    "fam_f2": {"variant": "fam", "n_mem": 1, "n_fam": 2},
    "fam_f4": {"variant": "fam", "n_mem": 1, "n_fam": 4},
    "fam_f8": {"variant": "fam", "n_mem": 1, "n_fam": 8},
    "full": {"variant": "full"},
}
#: The model settings each named variant is defined by (those its name states). An override
#: giving one of them another value conflicts with the name and is refused; the variant's
#: other settings are presets that ``--set`` overrides. A bare variant (``fam``, ``bswa``, …)
#: is defined by ``variant`` alone.
PASSKEY_VARIANT_DEFINED_BY: dict[str, tuple[str, ...]] = {
    **{name: ("variant", "n_mem") for name in ("bswa_m1", "bswa_m2", "bswa_m4",
                                               "fm1", "fm2", "fm4")},
    **{name: ("variant", "n_fam") for name in ("fam_f2", "fam_f4", "fam_f8")},
    "sum": ("variant",),
    "full": ("variant",),
}
#: Variants the PassKey sweep trains by default (Hwang et al. 2024, Fig. 9, plus FAM F ∈ {2,4,8}).
PASSKEY_DEFAULT_SWEEP = ("bswa_m1", "bswa_m2", "bswa_m4", "fm1", "fm2", "fm4", "sum",
                         "fam_f2", "fam_f4", "fam_f8")
#: Filler lengths PassKey evaluates by default.
PASSKEY_DEFAULT_FILLERS = (0, 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048)
#: Prompts per filler length that PassKey evaluates by default: the 95% Wilson interval of an
#: accuracy near 0.9 is then ±0.030 (388 prompts reach it; at 0.5 it is ±0.049 and ±0.03 needs
#: 1,064 prompts).
PASSKEY_DEFAULT_PROMPTS = 400
#: Torch CPU threads the PassKey commands use unless told otherwise: with a fixed thread count a
#: rerun is bit-identical (reductions split over threads add in another order).
PASSKEY_DEFAULT_THREADS = 1
