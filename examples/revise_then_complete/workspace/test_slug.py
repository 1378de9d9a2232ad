import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self) -> None:
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_runs(self) -> None:
        self.assertEqual(slugify("Hello, World!"), "hello-world")


if __name__ == "__main__":
    unittest.main()
