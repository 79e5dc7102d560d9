//===- MemoryState.cpp - Program state kept on each allocation ----------===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "MemoryState.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ConstraintManager.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ProgramStateTrait.h"

using namespace clang;
using namespace clang::ento;

REGISTER_MAP_WITH_PROGRAMSTATE(GpumemAllocations, SymbolRef,
                               gpumem::AllocState)

namespace gpumem {

const AllocState *getAlloc(ProgramStateRef State, SymbolRef Sym) {
  return State->get<GpumemAllocations>(Sym);
}

ProgramStateRef setAlloc(ProgramStateRef State, SymbolRef Sym,
                         const AllocState &AS) {
  return State->set<GpumemAllocations>(Sym, AS);
}

ProgramStateRef removeAlloc(ProgramStateRef State, SymbolRef Sym) {
  return State->remove<GpumemAllocations>(Sym);
}

AllocMap getAllocs(ProgramStateRef State) {
  return State->get<GpumemAllocations>();
}

bool allocationFailed(ProgramStateRef State, SymbolRef Sym,
                      const AllocState &AS) {
  ConstraintManager &CM = State->getConstraintManager();
  if (AS.Status && CM.isNull(State, AS.Status).isConstrainedFalse())
    return true;
  if (Sym->getType()->isPointerType() || Sym->getType()->isIntegerType())
    return CM.isNull(State, Sym).isConstrainedTrue();
  return false;
}

} // namespace gpumem
