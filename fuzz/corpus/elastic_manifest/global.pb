2
vocab *:

tok.weightvocab-B
half

vocab