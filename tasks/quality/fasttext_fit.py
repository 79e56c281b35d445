"""fastText's supervised training as a process of its own: `python fasttext_fit.py ARGUMENTS_JSON` trains with
`train_supervised(**arguments)` and saves the model to the `output` the arguments name.

tasks/quality/classifier.py runs it so: in the long-lived process of a full test-suite run, fastText stopped with
"Encountered NaN" on input that trains cleanly in a fresh process, and did so on every attempt once it had. A Dask
worker is as long-lived, so every training gets a fresh process (~0.3 s). Run as a script, the child imports
fastText alone; imported by the classifier, this file is in its code version.
"""
import json
import sys


def main() -> None:
    import fasttext

    arguments = json.loads(sys.argv[1])
    output = arguments.pop("output")
    fasttext.train_supervised(**arguments).save_model(output)


if __name__ == "__main__":
    main()
