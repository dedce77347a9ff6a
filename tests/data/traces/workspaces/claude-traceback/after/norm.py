import math


def rms(xs):
    total = sum(x * x for x in xs)
    return math.sqrt(total / len(xs))


print(rms([3.0, 4.0]))
