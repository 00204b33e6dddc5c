"""Mistakes any command can meet are one line and exit 2."""


def test_a_folder_where_a_file_belongs_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    lwm = str(Path(sys.executable).with_name("lwm"))
    (tmp_path / "run").mkdir()
    (tmp_path / "data" / "terminal_test.jsonl").mkdir(parents=True)
    (tmp_path / "C" / "trajectories.jsonl").mkdir(parents=True)
    for argv, folder in [(["bench", "score", "--predictions", str(tmp_path / "run"), "--out", str(tmp_path / "o")],
                          tmp_path / "run"),
                         (["bench", "run", "--data", str(tmp_path / "data"), "--model", "mock", "--out",
                           str(tmp_path / "out")], tmp_path / "data" / "terminal_test.jsonl"),
                         (["data", "stats", str(tmp_path / "C")], tmp_path / "C" / "trajectories.jsonl")]:
        done = subprocess.run([lwm, *argv], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (argv, done.stderr[-500:])
        assert done.stderr.strip() == f"lwm: error: {folder}: is a folder where a file belongs", argv


def test_a_file_where_a_run_folder_belongs_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    lwm = str(Path(sys.executable).with_name("lwm"))
    (tmp_path / "session.json").write_text("{}")
    data = Path(__file__).parents[2] / "data" / "bench-sample"
    done = subprocess.run([lwm, "bench", "run", "--data", str(data), "--limit", "1", "--model", "mock", "--out",
                           str(tmp_path / "session.json")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().endswith("session.json: is a file where a folder belongs")


def test_usage_errors_are_one_line_in_lwms_style_not_boxed_panels():
    import subprocess
    import sys
    from pathlib import Path

    lwm = str(Path(sys.executable).with_name("lwm"))
    for argv, says in [(["train", "sft", "--config", "/nonexistent.yaml"], "No such file or directory"),
                       (["bench", "run"], "Missing option '--data'"),
                       (["bench", "run", "--nosuch"], "No such option: --nosuch"),
                       (["nosuchcmd"], "No such command 'nosuchcmd'"),
                       (["bench", "run", "--data", "data/bench-sample", "--model", "mock?seed=99", "--out", "/tmp/x"],
                        "unknown option 'seed'")]:
        done = subprocess.run([lwm, *argv], capture_output=True, text=True, timeout=120,
                              cwd=Path(__file__).parents[2])
        assert done.returncode == 2, argv
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("lwm: error: ") and says in line and "╭" not in done.stderr, argv


def test_setup_into_a_data_folder_that_is_a_file_is_one_line(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    lwm = str(Path(sys.executable).with_name("lwm"))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for data_dir in (blocker, blocker / "below"):
        done = subprocess.run([lwm, "setup", "swe", "--no-system"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "LWM_DATA_DIR": str(data_dir)})
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-500:]
        assert done.stderr.strip().startswith("lwm: error: setup: lwm's data folder") and "LWM_DATA_DIR" in done.stderr
