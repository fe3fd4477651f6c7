"""The census of the ``skip_benign`` check with its figure.

Runs ``skip_benign`` (full settings unless ``--quick``), prints the report (counts of starts,
critical points, minima by kind per width m = k…2k and the certification of every minimum) and
writes the bar-chart figure of the census to ``--figure`` (default landscape_census.png) and
the verdict as JSON beside it.

Run:  nice -n 10 python benchmarks/landscape_census.py [--quick] [--figure PATH]
"""
import json
import sys

import proofs_checks as pc


def main():
    quick = "--quick" in sys.argv
    fig = "landscape_census.png"
    if "--figure" in sys.argv:
        fig = sys.argv[sys.argv.index("--figure") + 1]
    v = pc.run_check("skip_benign", quick=quick, figure=fig)
    print(v.report())
    with open(fig.rsplit(".", 1)[0] + ".json", "w") as fh:
        fh.write(v.to_json())


if __name__ == "__main__":
    main()
