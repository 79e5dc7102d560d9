//===- Facts.h - What a function does with the pointers it is given -----===//
//
// Part of gpumem. A function the analysis does not follow into (defined in
// another translation unit, or too long for the engine to inline) would
// otherwise take every pointer it is given as handed on: its release helper's
// double and wrong-kind releases were not seen, nor the leak of a buffer it
// only reads. Its facts, read from its body without following paths, say
// which parameter it releases (and with which call), which it allocates into
// (or whether it returns new memory), which it returns, and which it only
// reads. `gpumem lint` learns them from every unit in a first pass and gives
// them to the analysis of the units that call the functions.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_FACTS_H
#define GPUMEM_ANALYZER_FACTS_H

#include "clang/AST/Decl.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include <string>

namespace gpumem {

enum class FactKind {
  Releases,  ///< Releases the memory the parameter points to, with Call.
  Allocates, ///< Allocates with Call into the parameter (an out-parameter
             ///< `T **` or `T *&`), or returns new memory (Param -1).
  Returns,   ///< Returns the parameter.
  Reads,     ///< Only reads through the parameter and passes it to CUDA
             ///< calls and kernels: it keeps no copy and releases nothing.
};

struct Fact {
  FactKind Kind;
  int Param;
  std::string Call; ///< The modelled call as the body writes it.
};

using Facts = llvm::SmallVector<Fact, 2>;

/// The facts of \p FD's body; empty without a body.
Facts learnFacts(const clang::FunctionDecl *FD);

/// The name a function's facts are filed under across translation units:
/// its mangled name in C++ (so overloads differ), its name in C.
std::string factName(const clang::FunctionDecl *FD);

/// Facts learnt from other translation units, by name.
class FactTable {
  llvm::StringMap<Facts> ByName;

public:
  /// Reads lines `fact NAME KIND PARAM CALL`; other lines are skipped.
  bool read(llvm::StringRef Path);
  const Facts *find(llvm::StringRef Name) const;
  bool empty() const { return ByName.empty(); }
};

/// Writes the facts of the functions \p TU defines with external linkage in
/// its main file (`fact ...` lines), and the name of every function it calls
/// without a body (`calls NAME`), for the front end's first pass.
void writeFacts(const clang::TranslationUnitDecl *TU, llvm::StringRef Path);

} // namespace gpumem

#endif // GPUMEM_ANALYZER_FACTS_H
