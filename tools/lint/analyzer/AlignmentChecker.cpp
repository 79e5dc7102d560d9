//===- AlignmentChecker.cpp - GM003: misaligned vector views -------------===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "AlignmentChecker.h"
#include "clang/AST/RecordLayout.h"
#include "clang/StaticAnalyzer/Core/BugReporter/BugReporter.h"
#include "clang/StaticAnalyzer/Core/PathSensitive/SValBuilder.h"
#include "llvm/ADT/StringSwitch.h"
#include <numeric>

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

/// A byte offset known as Known + a multiple of Multiple (Multiple 0: the
/// offset is exactly Known).
struct Offset {
  int64_t Known = 0;
  uint64_t Multiple = 0;
};

Offset unknownOffset() { return {0, 1}; }

Offset scale(Offset O, int64_t By) {
  return {O.Known * By, O.Multiple * static_cast<uint64_t>(By < 0 ? -By : By)};
}

Offset add(Offset A, Offset B) {
  return {A.Known + B.Known, std::gcd(A.Multiple, B.Multiple)};
}

bool isVectorTypeName(StringRef Name) {
  Name.consume_front("__");
  if (Name == "half2" || Name == "nv_bfloat162")
    return true;
  StringRef Base = Name.rtrim("1234");
  if (Base.size() == Name.size() || Name.size() - Base.size() != 1)
    return false;
  return llvm::StringSwitch<bool>(Base)
      .Cases({"char", "uchar", "short", "ushort", "int", "uint"}, true)
      .Cases({"long", "ulong", "longlong", "ulonglong", "float", "double"},
             true)
      .Default(false);
}

class OffsetFinder {
  ProgramStateRef State;
  SValBuilder &SVB;
  ASTContext &Ctx;

public:
  OffsetFinder(ProgramStateRef State, SValBuilder &SVB, ASTContext &Ctx)
      : State(State), SVB(SVB), Ctx(Ctx) {}

  Offset ofSymbol(SymbolRef Sym, unsigned Depth = 0) {
    if (Depth > 8)
      return unknownOffset();
    if (const llvm::APSInt *V = SVB.getKnownValue(State, nonloc::SymbolVal(Sym)))
      return {V->getExtValue(), 0};
    if (const auto *Cast = dyn_cast<SymbolCast>(Sym))
      return ofSymbol(Cast->getOperand(), Depth + 1);
    if (const auto *SIE = dyn_cast<SymIntExpr>(Sym)) {
      Offset L = ofSymbol(SIE->getLHS(), Depth + 1);
      int64_t R = SIE->getRHS()->getExtValue();
      switch (SIE->getOpcode()) {
      case BO_Mul:
        return scale(L, R);
      case BO_Shl:
        return R >= 0 && R < 32 ? scale(L, int64_t(1) << R) : unknownOffset();
      case BO_Add:
        return add(L, {R, 0});
      case BO_Sub:
        return add(L, {-R, 0});
      case BO_And:
        // x & ~(2^k - 1) is a multiple of 2^k.
        if (R != 0) {
          uint64_t Low = static_cast<uint64_t>(R) & (~static_cast<uint64_t>(R) + 1);
          return {0, Low};
        }
        return {0, 0};
      default:
        return unknownOffset();
      }
    }
    if (const auto *ISE = dyn_cast<IntSymExpr>(Sym)) {
      Offset R = ofSymbol(ISE->getRHS(), Depth + 1);
      int64_t L = ISE->getLHS()->getExtValue();
      if (ISE->getOpcode() == BO_Mul)
        return scale(R, L);
      if (ISE->getOpcode() == BO_Add)
        return add(R, {L, 0});
      return unknownOffset();
    }
    if (const auto *SSE = dyn_cast<SymSymExpr>(Sym)) {
      Offset L = ofSymbol(SSE->getLHS(), Depth + 1);
      Offset R = ofSymbol(SSE->getRHS(), Depth + 1);
      switch (SSE->getOpcode()) {
      case BO_Add:
        return add(L, R);
      case BO_Sub:
        return add(L, scale(R, -1));
      case BO_Mul:
        if (L.Multiple == 0)
          return scale(R, L.Known);
        if (R.Multiple == 0)
          return scale(L, R.Known);
        if (L.Known == 0 && R.Known == 0)
          return {0, L.Multiple * R.Multiple};
        return unknownOffset();
      default:
        return unknownOffset();
      }
    }
    return unknownOffset();
  }

  Offset ofIndex(SVal Index) {
    if (auto CI = Index.getAs<nonloc::ConcreteInt>())
      return {CI->getValue()->getExtValue(), 0};
    if (SymbolRef Sym = Index.getAsSymbol())
      return ofSymbol(Sym);
    return unknownOffset();
  }

  /// The byte offset of \p R from its base region, which is returned in
  /// \p Base; false when the region is not made of elements and fields.
  bool ofRegion(const MemRegion *R, Offset &Result, const MemRegion *&Base) {
    Offset Total;
    while (true) {
      if (const auto *ER = dyn_cast<ElementRegion>(R)) {
        QualType T = ER->getElementType();
        int64_t Size =
            T->isVoidType() || T->isIncompleteType()
                ? 1
                : Ctx.getTypeSizeInChars(T).getQuantity();
        Total = add(Total, scale(ofIndex(ER->getIndex()), Size));
        R = ER->getSuperRegion();
        continue;
      }
      if (const auto *FR = dyn_cast<FieldRegion>(R)) {
        const FieldDecl *FD = FR->getDecl();
        const ASTRecordLayout &L = Ctx.getASTRecordLayout(FD->getParent());
        Total = add(Total, {int64_t(Ctx.toCharUnitsFromBits(
                                         L.getFieldOffset(FD->getFieldIndex()))
                                         .getQuantity()),
                            0});
        R = FR->getSuperRegion();
        continue;
      }
      break;
    }
    Result = Total;
    Base = R;
    return isa<SymbolicRegion, VarRegion>(R);
  }
};

int64_t positiveMod(int64_t V, int64_t M) { return ((V % M) + M) % M; }

} // namespace

void AlignmentChecker::checkPostStmt(const ExplicitCastExpr *CE,
                                     CheckerContext &C) const {
  QualType To = CE->getType();
  if (!To->isPointerType())
    return;
  QualType Pointee = To->getPointeeType().getUnqualifiedType();
  const auto *RD = Pointee->getAsRecordDecl();
  if (!RD || !RD->getIdentifier() || !isVectorTypeName(RD->getName()))
    return;
  ASTContext &Ctx = C.getASTContext();
  int64_t Need = Ctx.getTypeAlignInChars(Pointee).getQuantity();
  if (Need <= 1)
    return;

  const MemRegion *R = C.getSVal(CE->getSubExpr()).getAsRegion();
  if (!R)
    return;
  OffsetFinder Finder(C.getState(), C.getSValBuilder(), Ctx);
  Offset Off;
  const MemRegion *Base = nullptr;
  if (!Finder.ofRegion(R->StripCasts(), Off, Base))
    return;

  // The start of an allocation (a symbolic region: a pointer from cudaMalloc,
  // gpumem or a parameter) is taken as aligned for any vector (CUDA's
  // allocations are 256-byte aligned); a variable as its declaration says.
  int64_t BaseAlign = 256;
  if (const auto *VR = dyn_cast<VarRegion>(Base))
    BaseAlign = Ctx.getDeclAlign(VR->getDecl()).getQuantity();

  bool Provable = Off.Multiple % Need == 0;
  int64_t Rest = positiveMod(Off.Known, Need);
  std::string Msg;
  llvm::raw_string_ostream OS(Msg);
  std::string TypeName = Pointee.getAsString(Ctx.getPrintingPolicy());
  if (Provable && Rest != 0) {
    OS << "view as " << TypeName << " at byte offset " << Off.Known
       << " from the start of the "
       << (isa<VarRegion>(Base) ? "array" : "allocation")
       << ", which is not a multiple of its " << Need
       << "-byte alignment; vector loads and stores there fault";
  } else if (Pedantic && (!Provable || BaseAlign < Need)) {
    OS << "alignment not provable: view as " << TypeName << " needs " << Need
       << "-byte alignment, and the analyzer cannot show this offset keeps it";
  } else {
    return;
  }
  ExplodedNode *N = C.generateNonFatalErrorNode();
  if (!N)
    return;
  auto Report = std::make_unique<PathSensitiveBugReport>(Misaligned, Msg, N);
  Report->addRange(CE->getSourceRange());
  C.emitReport(std::move(Report));
}

} // namespace gpumem
