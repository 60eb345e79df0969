"""Fault injection (issue 28, item 20): a ``fork`` pool that runs a torch-based family after
its parent already ran it. torch's thread pool does not survive a fork, and the child used to
wait forever; now it runs single-threaded (``encoders.fork_safe_torch``) and gives the
parent's numbers."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import multiprocessing as mp
    import capeval
    C = ["a dog runs on the grass", "two cats sleep"]
    R = [["a dog is running"], ["cats sleeping"]]

    def job(_):
        return capeval.score(C, R, ["sentsim_max"]).corpus["sentsim_max"]

    if __name__ == "__main__":
        parent = job(0)
        with mp.get_context("fork").Pool(2) as pool:
            children = pool.map_async(job, range(2)).get(timeout=60)
        print(parent == children[0] == children[1], flush=True)
""")


@pytest.mark.needs("extra:bertscore", "model:encoder-minilm-l6")  # sentsim_max's default encoder
def test_fork_pool_after_the_parent_ran_torch(tmp_path):
    script = tmp_path / "fork_after_torch.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "True"
