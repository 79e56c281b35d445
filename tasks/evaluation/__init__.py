"""The ablation's evaluation side: the held-out suite, n-gram decontamination, exact bits per byte."""
