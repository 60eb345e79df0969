"""The metric name table: every output it names is registered by the module it names, and
every registered output is in the table."""
import subprocess
import sys

import pytest

from capeval.errors import UnknownMetricError
from capeval.metrics import registry


def test_table_matches_what_the_modules_register():
    registry.list_metrics()
    # Families users register at run time (other tests in this process) are not built-ins.
    registered = {name: cls.__module__ for name, cls in registry._OUTPUTS.items()
                  if cls.family not in registry._USER and registry.plugin_origin(cls) is None}
    assert registered == registry.OUTPUT_MODULES


def test_builtin_family_table_matches_what_the_modules_register():
    registry.list_metrics()
    families = {fam for fam, cls in registry._FAMILIES.items()
                if fam not in registry._USER and registry.plugin_origin(cls) is None}
    assert families == registry.BUILTIN_FAMILIES


def test_unknown_metric_names_the_known_ones():
    with pytest.raises(UnknownMetricError, match="unknown metric 'bleu5'.*bleu4"):
        registry.family_for("bleu5")


def test_asking_for_one_metric_imports_only_its_module():
    code = ("import sys; from capeval.metrics.registry import family_for; family_for('wmd'); "
            "print(sorted(m for m in sys.modules if m.startswith(('capeval.metrics.', 'capeval.learn', "
            "'capeval.qace'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)  # noqa: S307 - our own printed list
    assert "capeval.metrics.wmd" in loaded
    assert not any(m.startswith(("capeval.learn", "capeval.qace", "capeval.metrics.bertscore")) for m in loaded)
