import subprocess
import sys
import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self) -> None:
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_runs(self) -> None:
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_command_line(self) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "slug", "Hello, World!"],
            capture_output=True,
            text=True,
            check=True,
        )
        self.assertEqual(done.stdout.strip(), "hello-world")


if __name__ == "__main__":
    unittest.main()
