"""Each raw finding is marked as sitting in code, a comment, a string or a longer identifier."""

from __future__ import annotations

from stack.hipify.lexer import SourceMap

SOURCE = r"""#include "texture_fetch_functions.h"  // texture header
texture<float> tex;  /* a texture
   reference spanning lines: texture */
const char* s = "texture \" still texture";
char c = 't'; int n = 1'000'000; int my_texture = texture_count;
auto r = R"raw(texture in a raw string)raw"; texture<int> t2;
// continued comment \
texture on the next line
"""


def _contexts(word: str) -> list[str]:
    smap = SourceMap(SOURCE)
    out = []
    i = SOURCE.find(word)
    while i >= 0:
        out.append(smap.context(i, len(word)))
        i = SOURCE.find(word, i + 1)
    return out


def test_each_occurrence_of_texture_gets_its_context():
    assert _contexts("texture") == [
        "identifier",  # texture_fetch_functions.h: an #include's name is code, not a string
        "comment",
        "code",
        "comment",
        "comment",
        "string",
        "string",
        "identifier",  # my_texture
        "identifier",  # texture_count
        "string",  # raw string
        "code",
        "comment",  # // comment continued by a backslash-newline
    ]


def test_digit_separators_are_not_character_literals():
    # One separator: read as a character literal, its quote would never close and the
    # call after it would be "string" (an even count pairs up and proves nothing).
    text = "int n = 1'000; cudaMalloc(&p, n);\n"
    assert SourceMap(text).context(text.index("cudaMalloc"), len("cudaMalloc")) == "code"


def test_an_unterminated_comment_or_string_runs_to_the_end():
    assert SourceMap("/* texture").context(3, 7) == "comment"
    assert SourceMap('puts("texture\n').context(6, 7) == "string"
