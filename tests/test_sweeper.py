"""normlab's sweeper behaves as Hydra's basic one, except that a point whose config cannot be
composed fails alone: the other points keep their grid position (job number and sweep folder), no
empty batch is launched, ``sweep()`` returns one entry per point, and an app that does not count
such points (any app but normlab's) still exits 1 with Hydra's message, as with the basic sweeper.
Hydra's own sweeper tests run against it in ``make test-hydra``."""

import subprocess
import sys
import textwrap

import pytest
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

import hydra_plugins.normlab_sweeper.normlab_sweeper as plugin
from helpers import REPO

APP = """
import json, sys
import hydra
from hydra.core.hydra_config import HydraConfig

@hydra.main(version_base=None, config_path="conf")
def app(cfg):
    job = HydraConfig.get().job
    print("JOB " + json.dumps({"num": job.num, "overrides": list(HydraConfig.get().overrides.task),
                               "torch": "torch" in sys.modules}), flush=True)

app()
"""


def plain_app(tmp_path, *overrides):
    (tmp_path / "conf" / "db").mkdir(parents=True)
    for name in ("mysql", "pg"):
        (tmp_path / "conf" / "db" / f"{name}.yaml").write_text(f"host: {name}\n")
    (tmp_path / "app.py").write_text(APP)
    out = subprocess.run(
        [
            sys.executable,
            "app.py",
            "-m",
            "hydra/sweeper=normlab",
            f"hydra.sweep.dir={tmp_path}/sweep",
            "hydra/job_logging=disabled",
            *overrides,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    import json

    jobs = [json.loads(line[4:]) for line in out.stdout.splitlines() if line.startswith("JOB ")]
    return out, jobs


def test_points_keep_their_grid_position_and_a_plain_app_exits_1_as_with_the_basic_sweeper(
    tmp_path,
):
    # grid order: (mysql,1) (mysql,2) (nope,1) (nope,2) (pg,1) (pg,2); batches of 3
    out, jobs = plain_app(tmp_path, "+db=mysql,nope,pg", "+k=1,2", "hydra.sweeper.max_batch_size=3")
    assert out.returncode == 1, out.stderr
    assert [(j["num"], j["overrides"]) for j in jobs] == [
        (0, ["+db=mysql", "+k=1"]),
        (1, ["+db=mysql", "+k=2"]),
        (4, ["+db=pg", "+k=1"]),
        (5, ["+db=pg", "+k=2"]),
    ]
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()) == [
        "0",
        "1",
        "4",
        "5",
    ]
    assert out.stderr.count("[normlab] sweep point not run: +db=nope") == 2
    assert (
        "Could not find 'db/nope'" in out.stderr.split("[normlab]")[-1]
    )  # Hydra's own report, last
    assert not any(j["torch"] for j in jobs)  # the sweeper pulls in no training code


def test_a_grid_of_points_that_all_fail_to_compose_launches_nothing_and_exits_1(tmp_path):
    out, jobs = plain_app(tmp_path, "+db=nope,none", "hydra.sweeper.max_batch_size=1")
    assert out.returncode == 1 and jobs == []
    assert "Launching" not in out.stdout + out.stderr
    assert "Could not find 'db/nope'" in out.stderr


def test_importing_the_sweeper_imports_no_torch():
    code = (
        "import sys, hydra_plugins.normlab_sweeper.normlab_sweeper; print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_runs_of_composable_points():
    assert plugin.runs([]) == [] and plugin.runs([False]) == []
    assert plugin.runs([True, True, False, True, False, False, True]) == [
        range(0, 2),
        range(3, 4),
        range(6, 7),
    ]


class FakeLoader:
    def load_sweep_config(self, config, overrides):
        if any("bad" in o for o in overrides):
            raise ValueError(f"cannot compose {overrides}")


class FakeLauncher:
    def __init__(self):
        self.calls = []

    def launch(self, batch, initial_job_idx):
        self.calls.append(([list(b) for b in batch], initial_job_idx))
        return [
            JobReturn(
                overrides=list(b), status=JobStatus.COMPLETED, _return_value=initial_job_idx + i
            )
            for i, b in enumerate(batch)
        ]


@pytest.mark.parametrize("counted", [False, True])
def test_sweep_returns_one_entry_per_grid_point_and_launches_no_empty_batch(tmp_path, counted):
    # looked up now: Hydra's plugin scan (run by other tests in this process) re-executes the plugin
    # and the basic sweeper's modules, and a class from before the scan no longer matches its base
    sweeper = plugin.NormlabSweeper(max_batch_size=2)
    callbacks = {"summary": {"_target_": "normlab.run.callbacks.SweepSummary"}} if counted else {}
    sweeper.config = OmegaConf.create(
        {"hydra": {"sweep": {"dir": str(tmp_path)}, "callbacks": callbacks}}
    )
    sweeper.hydra_context = type("Ctx", (), {"config_loader": FakeLoader()})()
    sweeper.launcher = FakeLauncher()
    args = ["a=1,bad1,bad2,3,4"]
    if not counted:  # any app but normlab's: the other points run, then the first error is raised
        with pytest.raises(ValueError, match=r"cannot compose \['a=bad1'\]"):
            sweeper.sweep(args)
        assert sweeper.launcher.calls == [([["a=1"]], 0), ([["a=3"]], 3), ([["a=4"]], 4)]
        return
    from normlab.run.callbacks import invalid_points

    returns = sweeper.sweep(args)
    assert [len(b) for b in returns] == [2, 2, 1]
    flat = [r for b in returns for r in b]
    assert [r.overrides for r in flat] == [["a=1"], ["a=bad1"], ["a=bad2"], ["a=3"], ["a=4"]]
    assert [r.status for r in flat] == [
        JobStatus.COMPLETED,
        JobStatus.FAILED,
        JobStatus.FAILED,
        JobStatus.COMPLETED,
        JobStatus.COMPLETED,
    ]
    assert [flat[i].return_value for i in (0, 3, 4)] == [0, 3, 4]  # job number = grid position
    assert sweeper.launcher.calls == [
        ([["a=1"]], 0),
        ([["a=3"]], 3),
        ([["a=4"]], 4),
    ]  # never an empty batch
    assert [p for p, _ in invalid_points(tmp_path, remove=True)] == ["a=bad1", "a=bad2"]
    assert invalid_points(tmp_path) == []  # read once, by the sweep's count


def test_the_hydra_test_harness_swaps_the_basic_sweeper_for_normlabs(tmp_path):
    code = textwrap.dedent("""
        import hydra
        from hydra.core.hydra_config import HydraConfig
        @hydra.main(version_base=None, config_path=None)
        def app(cfg):
            print("PROBE", HydraConfig.get().sweeper._target_)
        app()
    """)
    for swap, target in (("1", "NormlabSweeper"), ("0", "BasicSweeper")):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "-m",
                "+x=1",
                "hydra/sweeper=basic",
                f"hydra.sweep.dir={tmp_path}/{swap}",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={
                "PYTHONPATH": f"{REPO}/scripts/hydra_swap:{REPO}",
                "NORMLAB_SWAP_SWEEPER": swap,
                "PATH": "/usr/bin:/bin",
            },
            timeout=120,
        )
        assert out.stdout.strip().endswith(target), out.stderr
