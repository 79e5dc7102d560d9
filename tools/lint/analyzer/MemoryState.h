//===- MemoryState.h - Program state kept on each allocation ------------===//
//
// Part of gpumem. One entry per allocation, keyed by the symbol of the
// pointer (or handle) the allocating call handed out.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_MEMORYSTATE_H
#define GPUMEM_ANALYZER_MEMORYSTATE_H

#include "MemoryApi.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ProgramState.h"
#include "llvm/ADT/FoldingSet.h"
#include "llvm/ADT/ImmutableMap.h"

namespace gpumem {

/// FlagEscaped: handed to code the analysis does not see (a helper of another
/// file, a library), which may have kept or released it: never reported
/// leaked, but a release made after it, and a use after that release, are
/// still checked (the memory the pointer names does not change).
enum : unsigned char {
  FlagRegistered = 0x08,
  FlagGlobal = 0x10,
  FlagEscaped = 0x20
};

/// Where a call happened, in the frame of the code the user wrote (not in
/// the runtime header's inline wrapper the engine entered).
struct CallSite {
  const clang::Expr *Expr = nullptr;
  const clang::LocationContext *Context = nullptr;
  llvm::StringRef Name; ///< Static storage: the tables' names.
};

struct AllocState {
  MemKind Kind;
  unsigned char Flags;
  bool Released;
  CallSite Alloc;
  CallSite Release;
  /// The status the allocating call returned (out-parameter allocators); a
  /// path on which it is non-zero made no allocation.
  clang::ento::SymbolRef Status;

  bool operator==(const AllocState &O) const {
    return Kind == O.Kind && Flags == O.Flags && Released == O.Released &&
           Alloc.Expr == O.Alloc.Expr && Release.Expr == O.Release.Expr &&
           Release.Context == O.Release.Context && Status == O.Status &&
           Alloc.Context == O.Alloc.Context;
  }
  void Profile(llvm::FoldingSetNodeID &ID) const {
    ID.AddInteger(static_cast<unsigned>(Kind));
    ID.AddInteger(Flags);
    ID.AddBoolean(Released);
    ID.AddPointer(Alloc.Expr);
    ID.AddPointer(Alloc.Context);
    ID.AddPointer(Alloc.Name.data());
    ID.AddPointer(Release.Expr);
    ID.AddPointer(Release.Context);
    ID.AddPointer(Release.Name.data());
    ID.AddPointer(Status);
  }
};

/// The allocation is reported when the path loses it unreleased.
inline bool mayLeak(const AllocState &AS) {
  return !AS.Released && isLeakTracked(AS.Kind) &&
         !(AS.Flags & (FlagGlobal | FlagEscaped));
}

using AllocMap = llvm::ImmutableMap<clang::ento::SymbolRef, AllocState>;

const AllocState *getAlloc(clang::ento::ProgramStateRef State,
                           clang::ento::SymbolRef Sym);
clang::ento::ProgramStateRef setAlloc(clang::ento::ProgramStateRef State,
                                      clang::ento::SymbolRef Sym,
                                      const AllocState &AS);
clang::ento::ProgramStateRef removeAlloc(clang::ento::ProgramStateRef State,
                                         clang::ento::SymbolRef Sym);
AllocMap getAllocs(clang::ento::ProgramStateRef State);

/// Allocations found leaked on a path through a function that may end the
/// program with exit(0): that path's GM001 is suppressed by the sink the
/// exit is, so the exit reports them again (as a `return` from main would).
clang::ento::ProgramStateRef
setLeakedBeforeExit(clang::ento::ProgramStateRef State,
                    clang::ento::SymbolRef Sym, const AllocState &AS);
AllocMap getLeakedBeforeExit(clang::ento::ProgramStateRef State);

/// cuMemMap: the mapping made at an address range's symbol, itself an
/// allocation (kind Mapping) under a symbol of its own that lives as long as
/// the address does.
clang::ento::SymbolRef getMapping(clang::ento::ProgramStateRef State,
                                  clang::ento::SymbolRef Address);
clang::ento::ProgramStateRef setMapping(clang::ento::ProgramStateRef State,
                                        clang::ento::SymbolRef Address,
                                        clang::ento::SymbolRef Mapping);
using MappingMap =
    llvm::ImmutableMap<clang::ento::SymbolRef, clang::ento::SymbolRef>;
MappingMap getMappings(clang::ento::ProgramStateRef State);
/// Drops the mappings whose address or mapping symbol is dead or untracked.
clang::ento::ProgramStateRef
removeDeadMappings(clang::ento::ProgramStateRef State,
                   clang::ento::SymbolReaper &SR);

/// True when the path has shown that the allocation did not happen: its
/// status is known to be an error or its pointer is known to be null.
bool allocationFailed(clang::ento::ProgramStateRef State,
                      clang::ento::SymbolRef Sym, const AllocState &AS);

} // namespace gpumem

#endif // GPUMEM_ANALYZER_MEMORYSTATE_H
