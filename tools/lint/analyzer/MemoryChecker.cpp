//===- MemoryChecker.cpp - Allocations, releases and escapes -------------===//
//
// Part of gpumem. The modelling half of gpumem.Memory: which call made the
// memory, with which flags, and whether it was released, carried along each
// path as state on the pointer's symbol.
//
//===----------------------------------------------------------------------===//

#include "MemoryChecker.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/CallEvent.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/SValBuilder.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {

SymbolRef allocationSymbol(SVal V) {
  if (auto LI = V.getAs<nonloc::LocAsInteger>())
    V = LI->getLoc();
  if (const MemRegion *R = V.getAsRegion()) {
    if (const auto *SR = dyn_cast<SymbolicRegion>(R->getBaseRegion()))
      return SR->getSymbol();
    return nullptr;
  }
  return V.getAsSymbol();
}

const MemRegion *stripPointerCasts(const MemRegion *R) {
  // MemRegion::StripCasts also strips element 0 of an array, which is a real
  // place: &bufs[0] cast to void ** must stay bufs[0], not become bufs.
  while (const auto *ER = dyn_cast<ElementRegion>(R)) {
    if (!ER->getIndex().isZeroConstant())
      break;
    const auto *Super = dyn_cast<TypedValueRegion>(ER->getSuperRegion());
    if (Super && Super->getValueType()->isArrayType())
      break;
    R = ER->getSuperRegion();
  }
  return R;
}

static bool inSystemHeader(const Decl *D) {
  return D && D->getASTContext().getSourceManager().isInSystemHeader(
                  D->getLocation());
}

/// The call is made by a library's code in a system header (CUB's
/// CachingDeviceAllocator, Thrust), not by one of the CUDA runtime's inline
/// wrappers (cudaMalloc<T>, named cuda*): the library owns what it allocates,
/// and its bookkeeping (containers the analyzer does not follow) decides when
/// it is released.
static bool madeByLibrary(CheckerContext &C) {
  for (const StackFrameContext *SF = C.getStackFrame(); SF && SF->getParent();
       SF = SF->getParent()->getStackFrame()) {
    const auto *FD = dyn_cast_or_null<FunctionDecl>(SF->getDecl());
    if (!FD || !inSystemHeader(FD))
      return false;
    if (!FD->getIdentifier() || !FD->getName().starts_with("cuda"))
      return true;
  }
  return false;
}

CallSite userCallSite(const Expr *E, StringRef Name, CheckerContext &C) {
  const LocationContext *LC = C.getLocationContext();
  const StackFrameContext *SF = LC->getStackFrame();
  // Leave the runtime header's inline wrappers (cudaMallocHost<T> calls
  // cudaHostAlloc): the site and the name are those the user wrote.
  while (SF->getParent() && inSystemHeader(SF->getDecl())) {
    if (const auto *FD = dyn_cast<FunctionDecl>(SF->getDecl()))
      if (FD->getIdentifier() && FD->getName().starts_with("cuda"))
        Name = FD->getName();
    if (const auto *CS = dyn_cast_or_null<Expr>(SF->getCallSite()))
      E = CS;
    LC = SF->getParent();
    SF = LC->getStackFrame();
  }
  return {E, LC, Name};
}

bool inDeviceCode(CheckerContext &C) {
  const Decl *D = C.getStackFrame()->getDecl();
  if (!D)
    return false;
  if (D->hasAttr<CUDAGlobalAttr>())
    return true;
  return D->hasAttr<CUDADeviceAttr>() && !D->hasAttr<CUDAHostAttr>();
}

enum class Target { Untracked, Local, Global };

/// An out-parameter the analyzer can follow: a variable of some frame on the
/// stack or a global variable, or a part of one at a known place. Memory
/// written anywhere else (fields of objects reached through pointers, slots
/// picked by an unknown index) belongs to whoever owns that place. Memory in
/// a global is followed for its kind only: the leak rules leave it alone.
static Target classifyTarget(const MemRegion *R) {
  while (const auto *Sub = dyn_cast<SubRegion>(R)) {
    if (const auto *ER = dyn_cast<ElementRegion>(R))
      if (!ER->getIndex().isConstant())
        return Target::Untracked;
    if (isa<VarRegion>(R))
      break;
    R = Sub->getSuperRegion();
  }
  const auto *VR = dyn_cast<VarRegion>(R);
  if (!VR)
    return Target::Untracked;
  if (isa<StackSpaceRegion>(VR->getRawMemorySpace()))
    return Target::Local;
  if (isa<GlobalsSpaceRegion>(VR->getRawMemorySpace()))
    return Target::Global;
  return Target::Untracked;
}

ProgramStateRef MemoryChecker::allocate(const AllocSpec &Spec,
                                        const CallEvent &Call, CheckerContext &C,
                                        ProgramStateRef State,
                                        bool StatusReturned) const {
  const LocationContext *LC = C.getLocationContext();
  SValBuilder &SVB = C.getSValBuilder();

  unsigned char Flags = 0;
  if (Spec.FlagsArg >= 0 && unsigned(Spec.FlagsArg) < Call.getNumArgs())
    if (const llvm::APSInt *F =
            SVB.getKnownValue(State, Call.getArgSVal(Spec.FlagsArg)))
      Flags = F->getZExtValue() & (FlagMapped | FlagWriteCombined);

  AllocState AS{Spec.Kind, Flags, false, {}, {}, nullptr};
  AS.Alloc = userCallSite(Call.getOriginExpr(), Spec.Name, C);

  SymbolRef Sym;
  if (Spec.OutArg < 0) {
    Sym = allocationSymbol(Call.getReturnValue());
  } else {
    if (unsigned(Spec.OutArg) >= Call.getNumArgs())
      return State;
    // A size known to be zero on this path (cudaMalloc(&p, 0), a total summed
    // over no elements) allocates nothing: CUDA gives NULL or an error.
    if (Spec.OutArg == 0 && Call.getNumArgs() > 1 &&
        Call.getArgExpr(1)->getType()->isIntegerType())
      if (const llvm::APSInt *Bytes =
              SVB.getKnownValue(State, Call.getArgSVal(1)))
        if (Bytes->isZero())
          return State;
    const MemRegion *Out = Call.getArgSVal(Spec.OutArg).getAsRegion();
    if (!Out)
      return State;
    Out = stripPointerCasts(Out);
    Target Where = classifyTarget(Out);
    if (Where == Target::Untracked)
      return State;
    if (Where == Target::Global)
      AS.Flags |= FlagGlobal;
    // A pointer to the variable (cudaMalloc(&p, n)), or the variable itself
    // bound to a reference parameter (a helper's `float *&p`).
    QualType ArgT = Call.getArgExpr(Spec.OutArg)->getType();
    bool ByReference =
        unsigned(Spec.OutArg) < Call.parameters().size() &&
        Call.parameters()[Spec.OutArg]->getType()->isReferenceType();
    QualType T = ByReference ? ArgT : ArgT->getPointeeType();
    if (Spec.PitchedPtr) {
      const auto *RD = T.isNull() ? nullptr : T->getAsRecordDecl();
      if (!RD)
        return State;
      const FieldDecl *Ptr = nullptr;
      for (const FieldDecl *FD : RD->fields())
        if (FD->getIdentifier() && FD->getName() == "ptr")
          Ptr = FD;
      if (!Ptr)
        return State;
      Out = C.getStoreManager().getRegionManager().getFieldRegion(
          Ptr, cast<SubRegion>(Out));
      T = Ptr->getType();
    }
    if (T.isNull() || T->isVoidType())
      return State;
    // Tagged, so that the symbol differs from the one the engine's own
    // invalidation of the out-parameter conjured for this call.
    const SymbolConjured *New = SVB.getSymbolManager().conjureSymbol(
        Call.getCFGElementRef(), LC, T, C.blockCount(), this);
    SVal V = T->isPointerType()
                 ? SVal(loc::MemRegionVal(
                       C.getStoreManager().getRegionManager().getSymbolicHeapRegion(
                           New)))
                 : SVal(nonloc::SymbolVal(New));
    State = State->bindLoc(loc::MemRegionVal(Out), V, LC);
    Sym = allocationSymbol(V);
    if (StatusReturned)
      AS.Status = Call.getReturnValue().getAsSymbol();
  }
  if (!Sym)
    return State;
  return setAlloc(State, Sym, AS);
}

void MemoryChecker::reallocated(const AllocSpec &Spec, const CallEvent &Call,
                                CheckerContext &C) const {
  ProgramStateRef State = C.getState();
  auto Ret = Call.getReturnValue().getAs<DefinedOrUnknownSVal>();
  if (!Ret) {
    C.addTransition(allocate(Spec, Call, C, State));
    return;
  }
  auto [NonNull, Null] = State->assume(*Ret);
  if (Null) {
    // Undo the release that checkPreCall recorded for this very call.
    SymbolRef Old =
        Call.getNumArgs() > 0 ? allocationSymbol(Call.getArgSVal(0)) : nullptr;
    const AllocState *AS = Old ? getAlloc(Null, Old) : nullptr;
    if (AS && AS->Released &&
        AS->Release.Expr ==
            userCallSite(Call.getOriginExpr(), "realloc", C).Expr) {
      AllocState Kept = *AS;
      Kept.Released = false;
      Kept.Release = {};
      Null = setAlloc(Null, Old, Kept);
    }
    C.addTransition(Null);
  }
  if (NonNull)
    C.addTransition(allocate(Spec, Call, C, NonNull));
}

void MemoryChecker::mapped(const CallEvent &Call, CheckerContext &C) const {
  // Followed only on a range this function reserved and still holds: a
  // mapping made at an address someone else owns is theirs to unmap.
  ProgramStateRef State = C.getState();
  SymbolRef Address = allocationSymbol(Call.getArgSVal(0));
  const AllocState *Range = Address ? getAlloc(State, Address) : nullptr;
  if (!Range || Range->Kind != MemKind::AddressRange || Range->Released ||
      (Range->Flags & (FlagGlobal | FlagEscaped)) ||
      allocationFailed(State, Address, *Range))
    return;
  QualType T = Call.getArgExpr(0)->IgnoreParenImpCasts()->getType();
  if (!T->isIntegerType())
    return;
  SymbolManager &SM = C.getSymbolManager();
  const SymbolConjured *Mapping =
      SM.conjureSymbol(Call.getCFGElementRef(), C.getLocationContext(), T,
                       C.blockCount(), this);
  // The mapping lives as long as the address it is made at.
  SM.addSymbolDependency(Address, Mapping);
  AllocState AS{MemKind::Mapping, 0, false, {}, {}, nullptr};
  AS.Alloc = userCallSite(Call.getOriginExpr(), "cuMemMap", C);
  AS.Status = Call.getReturnValue().getAsSymbol();
  State = setAlloc(State, Mapping, AS);
  C.addTransition(setMapping(State, Address, Mapping));
}

ExplodedNode *MemoryChecker::release(SVal Ptr, ReleaseFn Fn, CallSite Site,
                                     CheckerContext &C,
                                     ExplodedNode *Pred) const {
  if (!Pred)
    Pred = C.getPredecessor();
  ProgramStateRef State = Pred->getState();
  if (auto LI = Ptr.getAs<nonloc::LocAsInteger>())
    Ptr = LI->getLoc();
  SymbolRef Sym = nullptr;
  int64_t Interior = 0;
  if (const MemRegion *R = Ptr.getAsRegion()) {
    RegionOffset RO = R->StripCasts()->getAsOffset();
    const auto *SR = dyn_cast_or_null<SymbolicRegion>(RO.getRegion());
    if (!SR)
      return nullptr;
    Sym = SR->getSymbol();
    if (RO.hasSymbolicOffset())
      return nullptr;
    Interior = RO.getOffset() / C.getASTContext().getCharWidth();
  } else if (SymbolRef S = Ptr.getAsSymbol()) {
    Sym = S;
    // An integer device pointer with a constant added (cuMemFree(p + 16)).
    if (const auto *SIE = dyn_cast<SymIntExpr>(S))
      if (SIE->getOpcode() == BO_Add && getAlloc(State, SIE->getLHS())) {
        Sym = SIE->getLHS();
        Interior = SIE->getRHS()->getExtValue();
      }
  }
  if (!Sym)
    return nullptr;
  if (Fn == ReleaseFn::CuMemUnmap) {
    // cuMemUnmap(va, size) ends the mapping made at va, not the range.
    Sym = Interior == 0 ? getMapping(State, Sym) : nullptr;
    if (!Sym)
      return nullptr;
  }
  const AllocState *AS = getAlloc(State, Sym);
  if (!AS || allocationFailed(State, Sym, *AS))
    return nullptr;

  std::string Msg;
  llvm::raw_string_ostream OS(Msg);
  if (Interior != 0) {
    if (!InteriorRelease.isEnabled())
      return nullptr;
    OS << Site.Name << " is given a pointer " << Interior
       << " bytes into the memory allocated with " << AS->Alloc.Name
       << "; pass the pointer " << AS->Alloc.Name << " returned";
    // Taken as released from here on: the leak that follows is this bug.
    AllocState Next = *AS;
    Next.Released = true;
    Next.Release = Site;
    return reportRelease(InteriorRelease, Msg, Sym, Site.Expr,
                         setAlloc(State, Sym, Next), C, Pred);
  }
  if (AS->Released) {
    if (!DoubleRelease.isEnabled())
      return nullptr;
    OS << "memory allocated with " << AS->Alloc.Name
       << " is released again with " << Site.Name
       << " (it was released with " << AS->Release.Name << ")";
    return reportRelease(DoubleRelease, Msg, Sym, Site.Expr, State, C, Pred);
  }

  AllocState Next = *AS;
  Next.Released = true;
  Next.Release = Site;
  State = setAlloc(State, Sym, Next);

  switch (judgeRelease(AS->Kind, Fn)) {
  case ReleaseVerdict::Matches:
    return C.addTransition(State, Pred);
  case ReleaseVerdict::Mismatched:
    if (!MismatchedRelease.isEnabled())
      return C.addTransition(State, Pred);
    OS << "memory allocated with " << AS->Alloc.Name << " is released with "
       << Site.Name << "; release it with " << expectedRelease(AS->Kind);
    if (AS->Flags & FlagRegistered)
      OS << " after cudaHostUnregister";
    return reportRelease(MismatchedRelease, Msg, Sym, Site.Expr, State, C,
                         Pred);
  case ReleaseVerdict::NotStreamOrdered:
    if (!StreamOrderedRelease.isEnabled())
      return C.addTransition(State, Pred);
    OS << Site.Name << " releases in stream order, but memory allocated with "
       << AS->Alloc.Name
       << " is not stream-ordered device memory; release it with "
       << expectedRelease(AS->Kind);
    return reportRelease(StreamOrderedRelease, Msg, Sym, Site.Expr, State, C,
                         Pred);
  }
  return nullptr;
}

static ProgramStateRef escapeArguments(ProgramStateRef State,
                                       const CallEvent &Call) {
  for (unsigned I = 0, E = Call.getNumArgs(); I != E; ++I)
    if (SymbolRef Sym = allocationSymbol(Call.getArgSVal(I)))
      if (getAlloc(State, Sym))
        State = removeAlloc(State, Sym);
  return State;
}

namespace {

/// Each base region's pointers: the base regions they point into.
class PointerEdges : public StoreManager::BindingsHandler {
public:
  llvm::DenseMap<const MemRegion *, llvm::SmallVector<const MemRegion *, 2>>
      Edges;
  bool HandleBinding(StoreManager &, Store, const MemRegion *R,
                     SVal V) override {
    if (const MemRegion *To = V.getAsRegion())
      Edges[R->getBaseRegion()].push_back(To->getBaseRegion());
    return true;
  }
};

} // namespace

/// Traits that keep everything reachable through the pointers stored in
/// \p Buffers as it is: a CUDA call writes into the buffers it is given,
/// never through pointers stored in them (a launch's kernelParams array,
/// the &d_in it holds).
static void preserveReachable(ProgramStateRef State, ArrayRef<SVal> Buffers,
                              RegionAndSymbolInvalidationTraits &ITraits) {
  PointerEdges Edges;
  State->getStateManager().iterBindings(State, Edges);
  llvm::SmallPtrSet<const MemRegion *, 16> Seen;
  llvm::SmallVector<const MemRegion *, 16> Work;
  for (SVal B : Buffers)
    if (const MemRegion *R = B.getAsRegion())
      Work.push_back(R->getBaseRegion());
  llvm::SmallPtrSet<const MemRegion *, 4> Own(Work.begin(), Work.end());
  while (!Work.empty()) {
    const MemRegion *R = Work.pop_back_val();
    if (!Seen.insert(R).second)
      continue;
    if (!Own.count(R))
      ITraits.setTrait(R, RegionAndSymbolInvalidationTraits::TK_PreserveContents);
    auto It = Edges.Edges.find(R);
    if (It != Edges.Edges.end())
      Work.append(It->second.begin(), It->second.end());
  }
}

bool MemoryChecker::evalCall(const CallEvent &Call, CheckerContext &C) const {
  // CUDA's API functions are evaluated here rather than by the engine's
  // conservative evaluation, which would invalidate the whole object an
  // out-parameter points into: cudaStreamCreate(&s->stream) would make every
  // other field of *s unknown and lose the allocations held there. A CUDA
  // call writes only through its non-const pointer arguments: a scalar or
  // pointer out-parameter gets a fresh value, a buffer is invalidated.
  if (Call.isInSystemHeader() && evalStdCall(Call, C))
    return true;
  if (!isCudaApiCall(Call) || !Call.isInSystemHeader())
    return false;
  const auto *CE = dyn_cast_or_null<CallExpr>(Call.getOriginExpr());
  if (!CE)
    return false;
  ProgramStateRef State = C.getState();
  const LocationContext *LC = C.getLocationContext();
  SValBuilder &SVB = C.getSValBuilder();
  llvm::SmallVector<SVal, 4> Buffers;
  for (unsigned I = 0, E = Call.getNumArgs(); I != E; ++I) {
    QualType T = Call.getArgExpr(I)->IgnoreParenImpCasts()->getType();
    if (I < Call.parameters().size())
      T = Call.parameters()[I]->getType();
    if (!T->isPointerType() || T->getPointeeType().isConstQualified())
      continue;
    const MemRegion *R = Call.getArgSVal(I).getAsRegion();
    if (!R)
      continue;
    QualType Pointee = T->getPointeeType();
    const auto *TR = dyn_cast<TypedValueRegion>(stripPointerCasts(R));
    if ((Pointee->isScalarType()) && TR && TR->getValueType()->isScalarType()) {
      // Tagged with the region: two out-parameters of one type
      // (cudaMemGetInfo(&free, &total)) get two different values.
      QualType VT = TR->getValueType();
      const SymbolConjured *Sym = SVB.getSymbolManager().conjureSymbol(
          Call.getCFGElementRef(), LC, VT, C.blockCount(), TR);
      SVal Fresh = VT->isAnyPointerType()
                       ? SVal(loc::MemRegionVal(
                             C.getStoreManager()
                                 .getRegionManager()
                                 .getSymbolicRegion(Sym)))
                       : SVal(nonloc::SymbolVal(Sym));
      State = State->bindLoc(loc::MemRegionVal(TR), Fresh, LC);
      continue;
    }
    Buffers.push_back(loc::MemRegionVal(R));
  }
  if (!Buffers.empty()) {
    RegionAndSymbolInvalidationTraits ITraits;
    preserveReachable(State, Buffers, ITraits);
    State = State->invalidateRegions(Buffers, Call.getCFGElementRef(),
                                     C.blockCount(), LC,
                                     /*CausesPointerEscape=*/false, nullptr,
                                     nullptr, &ITraits);
  }
  QualType Result = Call.getResultType();
  if (!Result->isVoidType())
    State = State->BindExpr(CE, LC,
                            SVB.conjureSymbolVal(Call, Result, C.blockCount()));
  C.addTransition(State);
  return true;
}

/// A constructor of a class whose destructor does something (a smart
/// pointer's releases what it holds).
static bool takesOwnership(const CallEvent &Call) {
  const auto *Ctor = dyn_cast<CXXConstructorCall>(&Call);
  if (!Ctor)
    return false;
  const CXXConstructorDecl *D = Ctor->getDecl();
  const CXXRecordDecl *RD = D ? D->getParent() : nullptr;
  return !RD || !RD->hasDefinition() || !RD->hasTrivialDestructor();
}

/// exit(0), exit(EXIT_SUCCESS) and their kind: the program ends as a
/// `return 0;` from main ends it. A failure status (or one the path does not
/// know) is the error branch of a check: the failure is what it reports.
static bool isSuccessfulExit(const CallEvent &Call, CheckerContext &C) {
  if (!Call.isGlobalCFunction() || Call.getNumArgs() != 1)
    return false;
  StringRef Name = calleeName(Call);
  if (Name != "exit" && Name != "_exit" && Name != "_Exit" &&
      Name != "quick_exit")
    return false;
  const llvm::APSInt *Status =
      C.getSValBuilder().getKnownValue(C.getState(), Call.getArgSVal(0));
  const Expr *E = Call.getOriginExpr();
  return Status && Status->isZero() && E &&
         !isErrorBranchExit(E, C.getLocationContext()->getParentMap());
}

void MemoryChecker::checkPreCall(const CallEvent &Call,
                                 CheckerContext &C) const {
  StringRef Name = calleeName(Call);
  if (isSuccessfulExit(Call, C)) {
    reportLeaksAtExit(Call, C);
    return;
  }
  // A smart pointer or any object that is handed the pointer at construction
  // and may release it when it dies owns it from then on; so do the
  // project's owner functions. An object with a trivial destructor (a view,
  // an accessor, a pair of pointer and size) releases nothing by dying: the
  // memory stays the caller's, to be released by the caller.
  if (takesOwnership(Call) ||
      (!Name.empty() && OwnerFunctions.contains(Name))) {
    ProgramStateRef State = escapeArguments(C.getState(), Call);
    if (State != C.getState())
      C.addTransition(State);
    return;
  }
  if (!Name.empty() && ReleaseFunctions.contains(Name) &&
      Call.getNumArgs() > 0) {
    release(Call.getArgSVal(0), ReleaseFn::Custom,
            userCallSite(Call.getOriginExpr(), Name, C), C);
    return;
  }
  if (const ReleaseSpec *RS = findRelease(Call)) {
    if (RS->PtrArg < Call.getNumArgs())
      release(Call.getArgSVal(RS->PtrArg), RS->Fn,
              userCallSite(Call.getOriginExpr(), RS->Name, C), C);
    return;
  }
  // A release helper of another unit (no body here): released before the
  // call, so that a reference parameter's pointer is read as it was.
  if (!Call.getRuntimeDefinition().getDecl())
    if (const Facts *F = factsFor(Call, false)) {
      applyFacts(*F, Call, /*Releases=*/true, /*After=*/false, C);
      return;
    }
  if ((Name == "cudaHostRegister" || Name == "cudaHostUnregister") &&
      Call.getNumArgs() > 0) {
    ProgramStateRef State = C.getState();
    SymbolRef Sym = allocationSymbol(Call.getArgSVal(0));
    const AllocState *AS = Sym ? getAlloc(State, Sym) : nullptr;
    if (!AS)
      return;
    AllocState Next = *AS;
    if (Name == "cudaHostRegister")
      Next.Flags |= FlagRegistered;
    else
      Next.Flags &= ~FlagRegistered;
    C.addTransition(setAlloc(State, Sym, Next));
    return;
  }
  checkCallArguments(Call, C);
}

/// The call is to a project's error handler that does not return: one named
/// in NoReturnFunctions whose body the analyzer cannot see.
static bool isNoReturnHandler(const CallEvent &Call, CheckerContext &C,
                              const llvm::StringSet<> &Names) {
  if (Names.empty() || Call.isInSystemHeader() ||
      Call.getRuntimeDefinition().getDecl())
    return false;
  StringRef Name = calleeName(Call);
  if (!Name.empty() && Names.contains(Name))
    return true;
  const Expr *E = Call.getOriginExpr();
  if (!E || !E->getBeginLoc().isMacroID())
    return false;
  StringRef Macro = Lexer::getImmediateMacroName(
      E->getBeginLoc(), C.getSourceManager(), C.getLangOpts());
  return Names.contains(Macro);
}

void MemoryChecker::checkPostCall(const CallEvent &Call,
                                  CheckerContext &C) const {
  if (isNoReturnHandler(Call, C, NoReturnFunctions)) {
    C.generateSink(C.getState(), C.getPredecessor());
    return;
  }
  if (calleeName(Call) == "cuMemMap" && Call.getNumArgs() > 0 &&
      Call.isGlobalCFunction()) {
    if (!madeByLibrary(C))
      mapped(Call, C);
    return;
  }
  if (const Facts *F = factsFor(Call, C.wasInlined)) {
    // A helper of this unit the engine did not inline releases after the
    // call (its pointers were not escaped); one of another unit before it.
    applyFacts(*F, Call,
               /*Releases=*/Call.getRuntimeDefinition().getDecl() != nullptr,
               /*After=*/true, C);
    return;
  }
  if (const AllocSpec *Spec = findAllocation(Call)) {
    if (madeByLibrary(C))
      return;
    if (calleeName(Call) == "realloc")
      reallocated(*Spec, Call, C);
    else
      C.addTransition(allocate(*Spec, Call, C, C.getState()));
  }
}

void MemoryChecker::checkPostStmt(const CXXNewExpr *NE,
                                  CheckerContext &C) const {
  if (NE->getNumPlacementArgs() > 0)
    return;
  SymbolRef Sym = allocationSymbol(C.getSVal(NE));
  if (!Sym)
    return;
  bool Array = NE->isArray();
  AllocState AS{Array ? MemKind::NewArray : MemKind::New, 0, false, {}, {},
                nullptr};
  AS.Alloc = {NE, C.getLocationContext(), Array ? "new[]" : "new"};
  C.addTransition(setAlloc(C.getState(), Sym, AS));
}

void MemoryChecker::checkPreStmt(const CXXDeleteExpr *DE,
                                 CheckerContext &C) const {
  bool Array = DE->isArrayForm();
  release(C.getSVal(DE->getArgument()),
          Array ? ReleaseFn::DeleteArray : ReleaseFn::Delete,
          {DE, C.getLocationContext(), Array ? "delete[]" : "delete"}, C);
}

void MemoryChecker::checkPreStmt(const ReturnStmt *RS,
                                 CheckerContext &C) const {
  // Returned from the analysis' top frame: the caller owns it now.
  const Expr *RV = RS->getRetValue();
  if (!RV || !C.inTopFrame())
    return;
  SymbolRef Sym = allocationSymbol(C.getSVal(RV));
  if (Sym && getAlloc(C.getState(), Sym))
    C.addTransition(removeAlloc(C.getState(), Sym));
}

void MemoryChecker::checkLocation(SVal Loc, bool IsLoad, const Stmt *S,
                                  CheckerContext &C) const {
  if (inDeviceCode(C))
    return;
  if (SymbolRef Sym = allocationSymbol(Loc))
    checkHostAccess(Sym, IsLoad, S, C);
}

void MemoryChecker::checkBind(SVal Loc, SVal Val, const Stmt *,
                              bool, CheckerContext &C) const {
  // A variable with a cleanup function (GPUMEM_AUTO) releases what it holds.
  const auto *VR = dyn_cast_or_null<VarRegion>(Loc.getAsRegion());
  if (!VR || !VR->getDecl()->hasAttr<CleanupAttr>())
    return;
  SymbolRef Sym = allocationSymbol(Val);
  if (Sym && getAlloc(C.getState(), Sym))
    C.addTransition(removeAlloc(C.getState(), Sym));
}

void MemoryChecker::checkDeadSymbols(SymbolReaper &SR,
                                     CheckerContext &C) const {
  ProgramStateRef Before = C.getState();
  ProgramStateRef State = Before;
  llvm::SmallVector<SymbolRef, 2> Leaked;
  for (const auto &[Sym, AS] : getAllocs(Before)) {
    if (!SR.isDead(Sym))
      continue;
    if (mayLeak(AS) &&
        !allocationFailed(Before, Sym, AS)) {
      Leaked.push_back(Sym);
      if (mayExitSuccessfully(C.getLocationContext()))
        State = setLeakedBeforeExit(State, Sym, AS);
    }
    State = removeAlloc(State, Sym);
  }
  State = removeDeadMappings(State, SR);
  if (State == Before)
    return;
  if (Leaked.empty()) {
    C.addTransition(State);
    return;
  }
  reportLeaks(Leaked, Before, State, C);
}

void MemoryChecker::checkLiveSymbols(ProgramStateRef State,
                                     SymbolReaper &SR) const {
  // Keep each allocation's status alive with it, so that what the path
  // learnt about the status (the call failed) is still known at the leak.
  for (const auto &[Sym, AS] : getAllocs(State))
    if (AS.Status)
      SR.markLive(AS.Status);
  // A mapping lives as long as the address it is made at.
  for (const auto &[Address, Mapping] : getMappings(State))
    if (SR.isLive(Address))
      SR.markLive(Mapping);
}

/// The name a call through a function pointer is written with: the
/// variable's or the field's (`kernel`, `drv.cuMemFree`: cuMemFree).
static StringRef pointerCalleeName(const CallEvent &Call) {
  const auto *CE = dyn_cast_or_null<CallExpr>(Call.getOriginExpr());
  if (!CE)
    return "";
  const Expr *Callee = CE->getCallee()->IgnoreParenImpCasts();
  if (const auto *UO = dyn_cast<UnaryOperator>(Callee);
      UO && UO->getOpcode() == UO_Deref)
    Callee = UO->getSubExpr()->IgnoreParenImpCasts();
  const NamedDecl *ND = nullptr;
  if (const auto *DR = dyn_cast<DeclRefExpr>(Callee))
    ND = DR->getDecl();
  else if (const auto *ME = dyn_cast<MemberExpr>(Callee))
    ND = ME->getMemberDecl();
  return ND && ND->getIdentifier() ? ND->getName() : "";
}

/// A call through a function pointer whose target the path does not know
/// (the engine follows the ones it knows): taken as releasing nothing and
/// keeping nothing, unless its name says it releases (a table of driver
/// entry points' `cuMemFree`, a `free_fn`).
static bool isUnknownTargetThatKeepsNothing(const CallEvent &Call) {
  if (Call.getDecl() || !isa<SimpleFunctionCall>(Call))
    return false;
  StringRef Name = pointerCalleeName(Call);
  for (StringRef Word : {"free", "release", "destroy", "delete", "dealloc",
                         "own", "adopt", "keep", "store", "push", "insert"})
    if (Name.contains_insensitive(Word))
      return false;
  return true;
}

ProgramStateRef
MemoryChecker::checkPointerEscape(ProgramStateRef State,
                                  const InvalidatedSymbols &Escaped,
                                  const CallEvent *Call,
                                  PointerEscapeKind Kind) const {
  llvm::SmallPtrSet<SymbolRef, 4> Kept;
  // The out-parameter escape of a modelled call is the allocation itself.
  if (Call && (Kind == PSK_DirectEscapeOnCall ||
               Kind == PSK_IndirectEscapeOnCall ||
               Kind == PSK_EscapeOutParameters)) {
    StringRef Name = calleeName(*Call);
    if (findAllocation(*Call) || findRelease(*Call) ||
        ReleaseFunctions.contains(Name))
      return State;
    // The C library and the CUDA API never take ownership of a pointer they
    // are given; other functions the analyzer cannot see might. The C++
    // standard library's functions (not followed into their code) may store
    // into what they get by reference: after `std::rotate(v, v + 1, v + 3)`
    // no element of v is known to hold its allocation any more.
    if (Call->isInSystemHeader() && !isa<CXXInstanceCall>(Call) &&
        !isa<CXXConstructorCall>(Call) && !OwnerFunctions.contains(Name) &&
        !(Kind != PSK_DirectEscapeOnCall && Call->getDecl() &&
          Call->getDecl()->isInStdNamespace()))
      return State;
    // Only the pointers given as they are: one whose variable the call may
    // overwrite (`fp(&d)`) is gone with the old value.
    if (Kind == PSK_DirectEscapeOnCall &&
        isUnknownTargetThatKeepsNothing(*Call))
      return State;
    // A function whose facts say what it does with a pointer keeps nothing
    // it only reads, returns or releases (the release is applied around the
    // call).
    if (Kind == PSK_DirectEscapeOnCall)
      if (const Facts *F = factsFor(*Call, false))
        for (const Fact &Fa : *F)
          if (Fa.Param >= 0 && unsigned(Fa.Param) < Call->getNumArgs() &&
              Fa.Kind != FactKind::Allocates)
            if (SymbolRef Sym = allocationSymbol(Call->getArgSVal(Fa.Param)))
              Kept.insert(Sym);
  }
  // Kept, marked escaped: what the call may have done is keep or release the
  // memory, not change which memory the pointer names.
  auto MarkEscaped = [&State](SymbolRef Sym) {
    const AllocState *AS = getAlloc(State, Sym);
    if (!AS || (AS->Flags & FlagEscaped))
      return;
    AllocState Next = *AS;
    Next.Flags |= FlagEscaped;
    State = setAlloc(State, Sym, Next);
  };
  for (SymbolRef Sym : Escaped) {
    if (Kept.count(Sym))
      continue;
    MarkEscaped(Sym);
    // Whoever takes the address range takes the mapping made in it.
    if (SymbolRef Mapping = getMapping(State, Sym))
      MarkEscaped(Mapping);
  }
  return State;
}

const Facts *MemoryChecker::factsFor(const CallEvent &Call,
                                     bool Inlined) const {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Call.getDecl());
  if (Inlined || !FD || Call.isInSystemHeader() ||
      !isa<SimpleFunctionCall>(Call) || findAllocation(Call) ||
      findRelease(Call))
    return nullptr;
  FD = FD->getCanonicalDecl();
  if (const Decl *Def = Call.getRuntimeDefinition().getDecl()) {
    auto It = LocalFacts.find(FD);
    if (It == LocalFacts.end())
      It = LocalFacts.try_emplace(FD, learnFacts(cast<FunctionDecl>(Def)))
               .first;
    return It->second.empty() ? nullptr : &It->second;
  }
  if (ImportedFacts.empty())
    return nullptr;
  auto It = FactNames.find(FD);
  if (It == FactNames.end())
    It = FactNames.try_emplace(FD, factName(FD)).first;
  return ImportedFacts.find(It->second);
}

StringRef MemoryChecker::siteName(StringRef Helper, StringRef Call) const {
  return SiteNames.insert((Helper + " (" + Call + ")").str()).first->getKey();
}

void MemoryChecker::applyFacts(const Facts &F, const CallEvent &Call,
                               bool Releases, bool After,
                               CheckerContext &C) const {
  StringRef Helper = calleeName(Call);
  const auto *FD = dyn_cast<FunctionDecl>(Call.getDecl());
  const bool HasBody = Call.getRuntimeDefinition().getDecl() != nullptr;
  // One node after the other: each fact sees what the ones before did.
  ExplodedNode *N = C.getPredecessor();
  auto Next = [&N](ExplodedNode *Made) {
    if (Made)
      N = Made;
  };
  for (const Fact &Fa : F) {
    if (Fa.Param >= int(Call.getNumArgs()) ||
        Fa.Param >= int(FD->getNumParams()))
      continue;
    bool Reference =
        Fa.Param >= 0 &&
        FD->getParamDecl(Fa.Param)->getType()->isReferenceType();
    if (Releases && Fa.Kind == FactKind::Releases) {
      const ReleaseSpec *RS = findReleaseNamed(Fa.Call);
      SVal Ptr = Call.getArgSVal(Fa.Param);
      // A reference parameter: the pointer is the variable's value, which a
      // call the engine evaluated without the body has made unknown.
      if (Reference) {
        auto L = Ptr.getAs<Loc>();
        if (HasBody || !L)
          continue;
        Ptr = N->getState()->getSVal(*L);
      }
      if (RS)
        Next(release(Ptr, RS->Fn,
                     {Call.getOriginExpr(), C.getLocationContext(),
                      siteName(Helper, RS->Name)},
                     C, N));
    } else if (After && Fa.Kind == FactKind::Allocates) {
      const AllocSpec *AS = findAllocationNamed(Fa.Call);
      if (!AS)
        continue;
      AllocSpec Spec = *AS;
      Spec.Name = siteName(Helper, AS->Name);
      Spec.FlagsArg = -1;
      Spec.OutArg = Fa.Param;
      bool Status = isa<EnumType>(Call.getResultType().getCanonicalType());
      Next(C.addTransition(allocate(Spec, Call, C, N->getState(), Status), N));
    } else if (After && Fa.Kind == FactKind::Returns && !Reference) {
      if (const auto *CE = dyn_cast_or_null<CallExpr>(Call.getOriginExpr()))
        Next(C.addTransition(
            N->getState()->BindExpr(CE, C.getLocationContext(),
                                    Call.getArgSVal(Fa.Param)),
            N));
    }
  }
}

void MemoryChecker::checkEndOfTranslationUnit(const TranslationUnitDecl *TU,
                                              AnalysisManager &,
                                              BugReporter &) const {
  if (!FactsOut.empty())
    writeFacts(TU, FactsOut);
}

} // namespace gpumem
