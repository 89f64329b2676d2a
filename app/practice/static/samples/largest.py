"""Print the largest of the whole numbers read from standard input, or "no numbers"."""

import sys

numbers = [int(word) for word in sys.stdin.read().split()]
print(max(numbers) if numbers else "no numbers")
