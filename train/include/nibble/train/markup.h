// Markup to plain text, and the rule that says whether a text is English prose.
// Used by the corpus builder (nibble/train/corpus.h); torch-free.
//
// Each strip_* function keeps the words a reader sees and drops what is code,
// navigation or typesetting; it does not normalise whitespace (normalize_whitespace
// does, after it). They are line-oriented and forgiving: malformed markup is kept
// as text, never an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nibble::train {

// reStructuredText (kernel Documentation, Python's _sources):
//   - section adornments and table borders are dropped; grid-table '|' become spaces;
//   - directives, comments, targets and substitution definitions (".. ") are dropped
//     with their indented bodies, except admonitions (note, warning, seealso,
//     versionadded, ...) and object descriptions (function, c:macro, py:method, ...),
//     whose bodies are prose; an admonition keeps its inline argument;
//   - literal blocks (the indented block after a paragraph ending "::") are dropped,
//     and "::" becomes ":" (or nothing, on a line of its own);
//   - inline: :role:`text` and :role:`title <target>` -> text / title, `text <url>`_ ->
//     text, ``literal`` -> literal, **strong** and *emphasis* -> their words,
//     footnote references ([1]_, [#x]_) dropped.
std::string strip_rst(std::string_view text);

// Perl POD: command paragraphs keep their text (=head1 NAME -> NAME, =item * x -> x;
// =over, =back, =pod, =cut, =encoding -> nothing); =begin/=end regions, =for
// paragraphs and verbatim (indented) paragraphs are dropped; formatting codes
// B<> I<> C<> F<> S<> (also the C<< >> forms) keep their text, L<text|target> keeps
// text, E<lt> E<gt> E<verbar> E<sol> E<quot> E<amp> E<NNN> become the character,
// X<> and Z<> vanish.
std::string strip_pod(std::string_view text);

// HTML: tags dropped, block elements end a line, table cells are separated by a
// space, character references decoded (named: a fixed common set; numeric: as
// UTF-8). Dropped with their content: <head>, <script>, <style>, <pre>, <svg>,
// <textarea>, and any element whose class names navigation or chrome (Sphinx:
// sphinxsidebar, related, headerlink, highlight; DocBook: navheader, navfooter, toc;
// SQLite's pages: nosearch, menu, searchmenu, tagline, imgcontainer; nav, footer)
// or whose id is one of hd, ft, sidebar, searchbox, global-nav, footer.
std::string strip_html(std::string_view text);

// AsciiDoc (git's documentation): listing (----), literal (....), passthrough (++++)
// and comment (////) blocks are dropped; other block delimiters, title underlines,
// attribute entries (:name: value), block attributes ([verse], [[id]]), macros on a
// line of their own (include::x[]) and // comments are dropped; linkgit:cmd[1] ->
// cmd(1); `x` -> x; {litdd} -> "--".
std::string strip_asciidoc(std::string_view text);

// Vim help files: example blocks (the indented lines after a line ending in ">",
// up to a line starting with "<" or the next unindented line) are dropped, *tag*
// anchors vanish, |link| keeps its word, header marks (a trailing " ~"), rule lines
// and modelines (vim:...) are dropped.
std::string strip_vim_help(std::string_view text);

// A dictd entry (GCIDE, WordNet, Jargon, FOLDOC, Devil's Dictionary): GCIDE's
// pronunciation fields (\Af*fect"\) are dropped, source lines such as "[1913
// Webster]" (a line that is one bracketed tag under 40 bytes) are dropped, and the
// cross-reference braces {word} keep the word.
std::string strip_dict_entry(std::string_view text);

// Every text's last step: CR and control bytes dropped (tab -> space), each line
// trimmed with runs of spaces collapsed to one, runs of blank lines collapsed to
// one, no leading or trailing blank line; non-empty output ends in '\n'.
std::string normalize_whitespace(std::string_view text);

// Counts behind is_english_prose.
struct ProseStats {
  size_t non_space = 0;       // bytes that are not ASCII whitespace
  size_t ascii_letters = 0;   // [A-Za-z] bytes
  size_t words = 0;           // maximal runs of [A-Za-z]
  size_t function_words = 0;  // words among the 20 commonest English function words
};
ProseStats prose_stats(std::string_view text);

inline constexpr double kMinLetterFraction = 0.60;    // ascii_letters / non_space
inline constexpr double kMinFunctionFraction = 0.10;  // function_words / words
inline constexpr size_t kMinWords = 4;
inline constexpr size_t kFunctionTestWords = 40;      // the function-word test needs this many words

// The document filter: at least kMinWords words, at least kMinLetterFraction of the
// non-space bytes ASCII letters (rejects non-Latin scripts, binary, tables of
// numbers), and, for texts of kFunctionTestWords words or more, at least
// kMinFunctionFraction of the words English function words ("the", "of", "and",
// "to", "a", "in", "is", "that", "for", "it", "as", "with", "be", "on", "this",
// "are", "by", "or", "not", "an"; case-insensitive) -- which rejects code and other
// languages written in Latin letters. English prose scores 0.2-0.3, code under 0.1.
bool is_english_prose(const ProseStats& s);

// 64-bit FNV-1a of the bytes: the stable hash behind de-duplication and the split.
uint64_t fnv1a64(std::string_view bytes);

}  // namespace nibble::train
