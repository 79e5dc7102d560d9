/* The analyzer-config options gpumem's checkers are run with: read by the front end
 * (runner.c) and, with a regular expression, by the tests' CMakeLists.txt, so the product and
 * the -verify tests analyse the same paths. One line, one string.
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
 *   generation in nested loops, and no path reached the releases at its end. */
#ifndef GPUMEM_LINT_ENGINE_CONFIG_H
#define GPUMEM_LINT_ENGINE_CONFIG_H
#define GPUMEM_LINT_ENGINE_CONFIG "unroll-loops=true,widen-loops=true,c++-stdlib-inlining=false"
#endif
