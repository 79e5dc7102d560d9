/* The analyzer-config options gpumem's checkers are run with, and the checkers of clang's that
 * are off: read by the front end (runner.c) and, with a regular expression, by the tests'
 * CMakeLists.txt, so the product and the -verify tests analyse the same paths. One line, one
 * string each.
 *
 * unroll-loops: a loop whose trip count the engine knows (up to 128 steps) is followed step by
 *   step; without it the engine drops the path at the 4th visit of the loop's head, and nothing
 *   after `for (i = 0; i < 150; i++)` is analysed.
 * widen-loops: any other loop is left, at that 4th visit, with what it may have changed
 *   forgotten (the plugin then puts back what it does not write, and ends the widened path
 *   of a loop the path could already leave: Widening.cpp).
 * c++-stdlib-inlining=false: calls of the C++ standard library (`std::uniform_real_distribution`,
 *   `std::partial_sort`, streams) are not followed into their code but evaluated as calls of
 *   unknown functions (what they get by reference or pointer may change, nothing is released;
 *   std::min, std::max and std::swap are evaluated exactly: StdCalls.cpp).
 *   Followed, their loops spent the node budget of a benchmark's `main` on random number
 *   generation in nested loops, and no path reached the releases at its end.
 *
 * The checkers of clang's that are off (-analyzer-disable-checker), a second string. Clang's
 * reporting checkers: the memory they model is gpumem's checkers' to model (two models of one
 * malloc'd pointer would end paths at each other's reports). And three of its core checkers,
 * which end a path where a value is uninitialized (used in arithmetic, passed to a call,
 * branched on, assigned): `tic` set in a timing loop's round `if (i == warmup)` is garbage on
 * every path that leaves the loop before that round, and `toc - tic` ended them all, so
 * nothing after a benchmark's timing loop (its releases) was analysed. Their findings were never
 * gpumem's; the rest of the core checkers stay for their modelling (exit() ends a path,
 * builtins keep their meaning, a null dereference ends a path). */
#ifndef GPUMEM_LINT_ENGINE_CONFIG_H
#define GPUMEM_LINT_ENGINE_CONFIG_H
#define GPUMEM_LINT_ENGINE_CONFIG "unroll-loops=true,widen-loops=true,c++-stdlib-inlining=false"
#define GPUMEM_LINT_DISABLED_CHECKERS "deadcode,unix,cplusplus,security,nullability,optin,core.CallAndMessage,core.UndefinedBinaryOperatorResult,core.uninitialized"
#endif
