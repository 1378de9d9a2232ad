import unittest

from fizz import fizzbuzz


class FizzBuzzTest(unittest.TestCase):
    def test_plain_numbers(self) -> None:
        self.assertEqual(fizzbuzz(1), "1")
        self.assertEqual(fizzbuzz(7), "7")

    def test_multiples(self) -> None:
        self.assertEqual(fizzbuzz(9), "Fizz")
        self.assertEqual(fizzbuzz(10), "Buzz")
        self.assertEqual(fizzbuzz(45), "FizzBuzz")


if __name__ == "__main__":
    unittest.main()
