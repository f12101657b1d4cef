"""Sequence tasks beyond random walks in graph worlds (PassKey retrieval, …).

The PassKey sweep's names live here, free of torch, so that the command line can list them
without importing the models.
"""

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
#: Variants the PassKey sweep trains by default (Hwang et al. 2024, Fig. 9, plus FAM F ∈ {2,4,8}).
PASSKEY_DEFAULT_SWEEP = ("bswa_m1", "bswa_m2", "bswa_m4", "fm1", "fm2", "fm4", "sum",
                         "fam_f2", "fam_f4", "fam_f8")
#: Filler lengths PassKey evaluates by default.
PASSKEY_DEFAULT_FILLERS = (0, 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048)
