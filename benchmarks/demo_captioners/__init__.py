"""The four where-image2 GRU captioners (Tanti et al.), their beam search, training with early
stopping and vocabulary: the generators ``benchmarks/pregen_demo.py`` trains to demonstrate
pre-gen metrics end to end. Demo code, not part of the installed package: capeval scores any
model through ``capeval.pregen.adapters``."""
