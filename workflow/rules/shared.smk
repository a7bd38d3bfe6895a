# Assets several papers use (corpora, tiny pretrained models, digit sets) are built here.
# Nothing is shared yet beyond the generators in src/neurips26/data, which papers call directly.
