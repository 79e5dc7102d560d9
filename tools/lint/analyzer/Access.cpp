//===- Access.cpp - GM007 and GM009: host accesses and released memory ---===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "MemoryChecker.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

/// C library calls that read the memory their argument \p I points to.
bool readsArgument(StringRef Name, unsigned I) {
  if (Name == "memcpy" || Name == "memmove")
    return I == 1;
  if (Name == "memcmp" || Name == "strcmp" || Name == "strncmp")
    return I <= 1;
  if (Name == "fwrite" || Name == "strlen" || Name == "puts")
    return I == 0;
  if (Name == "write")
    return I == 1;
  return false;
}

} // namespace

void MemoryChecker::checkHostAccess(SymbolRef Sym, bool IsLoad, const Stmt *S,
                                    CheckerContext &C) const {
  const AllocState *AS = getAlloc(C.getState(), Sym);
  if (!AS)
    return;
  std::string Msg;
  llvm::raw_string_ostream OS(Msg);
  if (AS->Released) {
    if (!UseAfterRelease.isEnabled() || !isHostAccessible(AS->Kind))
      return;
    OS << "host " << (IsLoad ? "read of" : "write to")
       << " memory allocated with " << AS->Alloc.Name
       << " after it was released with " << AS->Release.Name;
    reportAccess(UseAfterRelease, Msg, Sym, S, C);
    return;
  }
  if (IsLoad && (AS->Flags & FlagWriteCombined) &&
      WriteCombinedRead.isEnabled()) {
    OS << "host read of write-combined memory allocated with "
       << AS->Alloc.Name
       << ": the host reads it uncached, many times slower than ordinary "
          "memory; read from a copy in ordinary memory or drop the "
          "write-combined flag";
    reportAccess(WriteCombinedRead, Msg, Sym, S, C);
  }
}

void MemoryChecker::checkCallArguments(const CallEvent &Call,
                                       CheckerContext &C) const {
  bool Cuda = isCudaApiCall(Call);
  StringRef Name = calleeName(Call);
  ProgramStateRef State = C.getState();
  for (unsigned I = 0, E = Call.getNumArgs(); I != E; ++I) {
    SymbolRef Sym = allocationSymbol(Call.getArgSVal(I));
    const AllocState *AS = Sym ? getAlloc(State, Sym) : nullptr;
    if (!AS)
      continue;
    if (AS->Released && Cuda && UseAfterRelease.isEnabled()) {
      std::string Msg = ("memory allocated with " + AS->Alloc.Name +
                         " is passed to " + Name +
                         " after it was released with " + AS->Release.Name)
                            .str();
      reportAccess(UseAfterRelease, Msg, Sym, Call.getArgExpr(I), C);
      return;
    }
    if (!AS->Released && (AS->Flags & FlagWriteCombined) &&
        readsArgument(Name, I) && !inDeviceCode(C))
      checkHostAccess(Sym, /*IsLoad=*/true, Call.getArgExpr(I), C);
  }
}

} // namespace gpumem
