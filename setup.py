"""Build of the optional compiled core; everything else is configured in pyproject.toml.

The extension is optional: without a C compiler the build prints a warning and installs
capeval without it, and the same results come from the numpy/Python code
(capeval/_compiled.py decides which runs)."""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "capeval._speedups",
            ["src/capeval/_speedups.c"],
            optional=True,
            # No fused multiply-add: every product and sum is rounded as the reference's are.
            extra_compile_args=["-ffp-contract=off"],
        ),
        # Native METEOR's per-pair aligner and phrase lookups (metrics/_meteor_native has the twins).
        Extension(
            "capeval._meteor_speedups",
            ["src/capeval/_meteor_speedups.c"],
            optional=True,
            extra_compile_args=["-ffp-contract=off"],
        ),
        # METEOR's one-time paraphrase-table conversion in one pass (convert.py has the twins).
        Extension(
            "capeval.metrics._meteor_native._paratable",
            ["src/capeval/metrics/_meteor_native/_paratable.c"],
            optional=True,
            extra_compile_args=["-ffp-contract=off"],
        ),
    ]
)
