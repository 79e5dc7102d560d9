//===- MemoryApi.h - The allocation and release calls gpumem models ------===//
//
// Part of gpumem. The CUDA runtime, CUDA driver, gpumem and C/C++ calls that
// make or release memory, what kind of memory each makes, and which release
// matches which kind.
//
//===----------------------------------------------------------------------===//

#ifndef GPUMEM_ANALYZER_MEMORYAPI_H
#define GPUMEM_ANALYZER_MEMORYAPI_H

#include "clang/StaticAnalyzer/Core/PathSensitive/CallEvent.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

namespace gpumem {

/// What a call made: the kinds that differ in how they must be released.
enum class MemKind : unsigned char {
  Device,        ///< cudaMalloc, cudaMallocPitch, cudaMalloc3D, cuMemAlloc.
  Managed,       ///< cudaMallocManaged, cuMemAllocManaged.
  StreamOrdered, ///< cudaMallocAsync, cudaMallocFromPoolAsync, cuMemAllocAsync.
  Pinned,        ///< cudaMallocHost, cudaHostAlloc, cuMemAllocHost/HostAlloc.
  Array,         ///< cudaMallocArray, cudaMalloc3DArray (a handle).
  Physical,      ///< cuMemCreate (a generic allocation handle).
  AddressRange,  ///< cuMemAddressReserve (a range of virtual addresses).
  Mapping,       ///< cuMemMap (a handle's memory mapped into a range).
  GpumemDevice,
  GpumemManaged,
  GpumemPinned,
  GpumemHost,
  GpumemDeviceAsync,
  Heap,     ///< malloc, calloc, realloc.
  New,      ///< new.
  NewArray, ///< new[].
};

/// The release calls, grouped by what they accept.
enum class ReleaseFn : unsigned char {
  CudaFree,
  CudaFreeHost,
  CudaFreeAsync,
  CudaFreeArray,
  CuMemFree,
  CuMemFreeHost,
  CuMemFreeAsync,
  CuMemRelease,
  CuMemAddressFree,
  CuMemUnmap,
  GpumemFree,
  GpumemFreeAsync,
  Free,
  Delete,
  DeleteArray,
  Custom, ///< A function named in gpumem.Memory:ReleaseFunctions.
};

enum MemFlag : unsigned char {
  FlagMapped = 0x02,        ///< cudaHostAllocMapped and its equals.
  FlagWriteCombined = 0x04, ///< cudaHostAllocWriteCombined and its equals.
};

/// How an allocating call hands out the memory.
struct AllocSpec {
  MemKind Kind;
  llvm::StringRef Name; ///< The name users write (no _v2, no _at).
  int OutArg;           ///< Index of the out-parameter; -1: the return value.
  int FlagsArg;         ///< Index of the flags argument; -1: none.
  bool PitchedPtr;      ///< The out-parameter is a cudaPitchedPtr (use .ptr).
};

struct ReleaseSpec {
  ReleaseFn Fn;
  llvm::StringRef Name;
  unsigned PtrArg;
};

enum class ReleaseVerdict { Matches, Mismatched, NotStreamOrdered };

/// The allocation a call makes, if it is one gpumem models. Only extern "C"
/// functions are matched, so the runtime's inline C++ wrappers, which the
/// engine inlines, do not bind a second symbol.
const AllocSpec *findAllocation(const clang::ento::CallEvent &Call);
/// The release a call performs, if it is one of the modelled ones.
const ReleaseSpec *findRelease(const clang::ento::CallEvent &Call);

/// The same, by the name of an extern "C" function (a call the analysis
/// did not see, learnt from a function's body).
const AllocSpec *findAllocationNamed(llvm::StringRef Name);
const ReleaseSpec *findReleaseNamed(llvm::StringRef Name);

ReleaseVerdict judgeRelease(MemKind Kind, ReleaseFn Fn);
/// The calls that release \p Kind correctly, for messages.
llvm::StringRef expectedRelease(MemKind Kind);
/// True for the kinds the leak rules report (not malloc/new memory).
bool isLeakTracked(MemKind Kind);
/// True for memory the host may load from and store to.
bool isHostAccessible(MemKind Kind);
/// True for memory made by gpumem's allocators.
bool isGpumemKind(MemKind Kind);

/// True for a name of CUDA's runtime (cudaX...) or driver (cuX...) API.
bool isCudaApiName(llvm::StringRef Name);
/// True for an extern "C" function of CUDA's runtime or driver API.
bool isCudaApiCall(const clang::ento::CallEvent &Call);
/// The name of the function called, or "" when there is none.
llvm::StringRef calleeName(const clang::ento::CallEvent &Call);

} // namespace gpumem

#endif // GPUMEM_ANALYZER_MEMORYAPI_H
