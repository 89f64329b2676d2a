"""Print the largest number read from standard input: a sample with two classic bugs."""

import sys

largest = 0  # Bug: when every number is negative, none is larger than 0.
for word in sys.stdin.read().split():
    if int(word) > largest:
        largest = int(word)
print(largest)  # Bug: with no numbers at all it prints 0, not "no numbers".
