"""What the whole-CLI bench scripts beside bench.py share (archive.py, fleet.py,
agents.py)."""
import os, statistics, subprocess, time


def run_env(home, **extra):
    """The environment of a run: PATH, LANG and TZ of this one, `home` as the user's
    home, no colour, and `extra`."""
    e = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TZ")}
    e.update({"HOME": home, "NO_COLOR": "1"}, **extra)
    return e


def timed(cmd, stdin=None, env=None):
    """Wall seconds of one run and its standard output (bytes); a failed run stops the
    bench with its stderr."""
    t = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, capture_output=True, env=env)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}: {out.stderr.decode()}")
    return dt, out.stdout


def record(name, text):
    """Print `text` and append it to benches/`name` (a results file)."""
    print(text)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, name), "a") as fh:
        fh.write(text)


def summary(ts):
    """Median, min and max."""
    return statistics.median(ts), min(ts), max(ts)
