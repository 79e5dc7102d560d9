//===- MemoryState.cpp - Program state kept on each allocation ----------===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "MemoryState.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ConstraintManager.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/SymbolManager.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/ProgramStateTrait.h"

using namespace clang;
using namespace clang::ento;

REGISTER_MAP_WITH_PROGRAMSTATE(GpumemAllocations, SymbolRef,
                               gpumem::AllocState)
REGISTER_MAP_WITH_PROGRAMSTATE(GpumemMappings, SymbolRef, SymbolRef)
REGISTER_MAP_WITH_PROGRAMSTATE(GpumemLeakedBeforeExit, SymbolRef,
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

ProgramStateRef setLeakedBeforeExit(ProgramStateRef State, SymbolRef Sym,
                                    const AllocState &AS) {
  return State->set<GpumemLeakedBeforeExit>(Sym, AS);
}

AllocMap getLeakedBeforeExit(ProgramStateRef State) {
  return State->get<GpumemLeakedBeforeExit>();
}

SymbolRef getMapping(ProgramStateRef State, SymbolRef Address) {
  const SymbolRef *M = State->get<GpumemMappings>(Address);
  return M ? *M : nullptr;
}

ProgramStateRef setMapping(ProgramStateRef State, SymbolRef Address,
                           SymbolRef Mapping) {
  return State->set<GpumemMappings>(Address, Mapping);
}

MappingMap getMappings(ProgramStateRef State) {
  return State->get<GpumemMappings>();
}

ProgramStateRef removeDeadMappings(ProgramStateRef State, SymbolReaper &SR) {
  for (const auto &[Address, Mapping] : State->get<GpumemMappings>())
    if (SR.isDead(Address) || SR.isDead(Mapping) || !getAlloc(State, Mapping))
      State = State->remove<GpumemMappings>(Address);
  return State;
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
