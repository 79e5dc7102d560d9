//===- MemoryApi.cpp - The allocation and release calls gpumem models ----===//
//
// Part of gpumem.
//
//===----------------------------------------------------------------------===//

#include "MemoryApi.h"
#include "clang/AST/Decl.h"

using namespace clang;
using namespace clang::ento;

namespace gpumem {
namespace {

/// The allocating calls: the function's name, and what it makes. One table,
/// read by name (CallDescription's SimpleFunc matching is by name too, for
/// the extern "C" functions findAllocation() lets through).
const std::pair<StringRef, AllocSpec> AllocationRows[] = {
    {"cudaMalloc", {MemKind::Device, "cudaMalloc", 0, -1, false}},
    {"cudaMallocPitch", {MemKind::Device, "cudaMallocPitch", 0, -1, false}},
    {"cudaMalloc3D", {MemKind::Device, "cudaMalloc3D", 0, -1, true}},
    {"cudaMallocManaged",
     {MemKind::Managed, "cudaMallocManaged", 0, -1, false}},
    {"cudaMallocAsync",
     {MemKind::StreamOrdered, "cudaMallocAsync", 0, -1, false}},
    {"cudaMallocFromPoolAsync",
     {MemKind::StreamOrdered, "cudaMallocFromPoolAsync", 0, -1, false}},
    {"cudaMallocHost", {MemKind::Pinned, "cudaMallocHost", 0, -1, false}},
    {"cudaHostAlloc", {MemKind::Pinned, "cudaHostAlloc", 0, 2, false}},
    {"cudaMallocArray", {MemKind::Array, "cudaMallocArray", 0, -1, false}},
    {"cudaMalloc3DArray", {MemKind::Array, "cudaMalloc3DArray", 0, -1, false}},
    {"cuMemAlloc", {MemKind::Device, "cuMemAlloc", 0, -1, false}},
    {"cuMemAlloc_v2", {MemKind::Device, "cuMemAlloc", 0, -1, false}},
    {"cuMemAllocPitch", {MemKind::Device, "cuMemAllocPitch", 0, -1, false}},
    {"cuMemAllocPitch_v2", {MemKind::Device, "cuMemAllocPitch", 0, -1, false}},
    {"cuMemAllocManaged",
     {MemKind::Managed, "cuMemAllocManaged", 0, -1, false}},
    {"cuMemAllocAsync",
     {MemKind::StreamOrdered, "cuMemAllocAsync", 0, -1, false}},
    {"cuMemAllocFromPoolAsync",
     {MemKind::StreamOrdered, "cuMemAllocFromPoolAsync", 0, -1, false}},
    {"cuMemAllocHost", {MemKind::Pinned, "cuMemAllocHost", 0, -1, false}},
    {"cuMemAllocHost_v2", {MemKind::Pinned, "cuMemAllocHost", 0, -1, false}},
    {"cuMemHostAlloc", {MemKind::Pinned, "cuMemHostAlloc", 0, 2, false}},
    {"cuMemCreate", {MemKind::Physical, "cuMemCreate", 0, -1, false}},
    {"cuMemAddressReserve",
     {MemKind::AddressRange, "cuMemAddressReserve", 0, -1, false}},
    {"gpumem_device_alloc_at",
     {MemKind::GpumemDevice, "gpumem_device_alloc", -1, -1, false}},
    {"gpumem_managed_alloc_at",
     {MemKind::GpumemManaged, "gpumem_managed_alloc", -1, -1, false}},
    {"gpumem_pinned_alloc_at",
     {MemKind::GpumemPinned, "gpumem_pinned_alloc", -1, -1, false}},
    {"gpumem_host_alloc_at",
     {MemKind::GpumemHost, "gpumem_host_alloc", -1, 2, false}},
    {"gpumem_device_alloc_async_at",
     {MemKind::GpumemDeviceAsync, "gpumem_device_alloc_async", -1, -1, false}},
    {"malloc", {MemKind::Heap, "malloc", -1, -1, false}},
    {"calloc", {MemKind::Heap, "calloc", -1, -1, false}},
    {"realloc", {MemKind::Heap, "realloc", -1, -1, false}},
    {"aligned_alloc", {MemKind::Heap, "aligned_alloc", -1, -1, false}},
};

/// The release calls, as AllocationRows.
const std::pair<StringRef, ReleaseSpec> ReleaseRows[] = {
    {"cudaFree", {ReleaseFn::CudaFree, "cudaFree", 0}},
    {"cudaFreeHost", {ReleaseFn::CudaFreeHost, "cudaFreeHost", 0}},
    {"cudaFreeAsync", {ReleaseFn::CudaFreeAsync, "cudaFreeAsync", 0}},
    {"cudaFreeArray", {ReleaseFn::CudaFreeArray, "cudaFreeArray", 0}},
    {"cuMemFree", {ReleaseFn::CuMemFree, "cuMemFree", 0}},
    {"cuMemFree_v2", {ReleaseFn::CuMemFree, "cuMemFree", 0}},
    {"cuMemFreeHost", {ReleaseFn::CuMemFreeHost, "cuMemFreeHost", 0}},
    {"cuMemFreeAsync", {ReleaseFn::CuMemFreeAsync, "cuMemFreeAsync", 0}},
    {"cuMemRelease", {ReleaseFn::CuMemRelease, "cuMemRelease", 0}},
    {"cuMemAddressFree", {ReleaseFn::CuMemAddressFree, "cuMemAddressFree", 0}},
    // Releases the mapping made at the address, not the address range
    // (MemoryChecker::release looks the mapping up).
    {"cuMemUnmap", {ReleaseFn::CuMemUnmap, "cuMemUnmap", 0}},
    {"gpumem_free", {ReleaseFn::GpumemFree, "gpumem_free", 0}},
    {"gpumem_free_at", {ReleaseFn::GpumemFree, "gpumem_free", 0}},
    {"gpumem_free_async_at",
     {ReleaseFn::GpumemFreeAsync, "gpumem_free_async", 0}},
    {"free", {ReleaseFn::Free, "free", 0}},
    {"realloc", {ReleaseFn::Free, "realloc", 0}},
};

template <class Spec, size_t N>
const Spec *lookup(const std::pair<StringRef, Spec> (&Rows)[N],
                   StringRef Name) {
  for (const auto &[RowName, S] : Rows)
    if (RowName == Name)
      return &S;
  return nullptr;
}

bool isExternCFunction(const CallEvent &Call) {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Call.getDecl());
  return FD && FD->isExternC();
}

} // namespace

StringRef calleeName(const CallEvent &Call) {
  const auto *FD = dyn_cast_or_null<FunctionDecl>(Call.getDecl());
  if (!FD || !FD->getIdentifier())
    return "";
  return FD->getName();
}

const AllocSpec *findAllocation(const CallEvent &Call) {
  if (!isExternCFunction(Call))
    return nullptr;
  return lookup(AllocationRows, calleeName(Call));
}

const ReleaseSpec *findRelease(const CallEvent &Call) {
  if (!isExternCFunction(Call))
    return nullptr;
  return lookup(ReleaseRows, calleeName(Call));
}

const AllocSpec *findAllocationNamed(StringRef Name) {
  return lookup(AllocationRows, Name);
}

const ReleaseSpec *findReleaseNamed(StringRef Name) {
  return lookup(ReleaseRows, Name);
}

bool isCudaApiName(StringRef Name) {
  if (Name.starts_with("cuda"))
    return Name.size() > 4 && isUppercase(Name[4]);
  return Name.starts_with("cu") && Name.size() > 2 && isUppercase(Name[2]);
}

bool isCudaApiCall(const CallEvent &Call) {
  return isExternCFunction(Call) && isCudaApiName(calleeName(Call));
}

bool isGpumemKind(MemKind Kind) {
  switch (Kind) {
  case MemKind::GpumemDevice:
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
  case MemKind::GpumemDeviceAsync:
    return true;
  default:
    return false;
  }
}

bool isLeakTracked(MemKind Kind) {
  return Kind != MemKind::Heap && Kind != MemKind::New &&
         Kind != MemKind::NewArray;
}

bool isHostAccessible(MemKind Kind) {
  switch (Kind) {
  case MemKind::Managed:
  case MemKind::Pinned:
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
  case MemKind::Heap:
  case MemKind::New:
  case MemKind::NewArray:
    return true;
  default:
    return false;
  }
}

static bool isStreamOrderedRelease(ReleaseFn Fn) {
  return Fn == ReleaseFn::CudaFreeAsync || Fn == ReleaseFn::CuMemFreeAsync ||
         Fn == ReleaseFn::GpumemFreeAsync;
}

ReleaseVerdict judgeRelease(MemKind Kind, ReleaseFn Fn) {
  if (Fn == ReleaseFn::Custom)
    return ReleaseVerdict::Matches;
  // gpumem keeps a registry of its allocations: only its own release updates
  // it, and its release refuses memory it did not make.
  if (isGpumemKind(Kind) != (Fn == ReleaseFn::GpumemFree ||
                             Fn == ReleaseFn::GpumemFreeAsync))
    return ReleaseVerdict::Mismatched;
  switch (Kind) {
  case MemKind::Device:
  case MemKind::StreamOrdered:
    // The CUDA Runtime API documents that cudaFreeAsync may release memory
    // from cudaMalloc as well as from cudaMallocAsync ("Stream Ordered Memory
    // Allocator": the free then waits for the stream); the driver's and the
    // runtime's releases accept each other's device memory.
    if (Fn == ReleaseFn::CudaFree || Fn == ReleaseFn::CudaFreeAsync ||
        Fn == ReleaseFn::CuMemFree || Fn == ReleaseFn::CuMemFreeAsync)
      return ReleaseVerdict::Matches;
    return ReleaseVerdict::Mismatched;
  case MemKind::Managed:
    if (Fn == ReleaseFn::CudaFree || Fn == ReleaseFn::CuMemFree)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Pinned:
    if (Fn == ReleaseFn::CudaFreeHost || Fn == ReleaseFn::CuMemFreeHost)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Array:
    if (Fn == ReleaseFn::CudaFreeArray)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Physical:
    if (Fn == ReleaseFn::CuMemRelease)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::AddressRange:
    if (Fn == ReleaseFn::CuMemAddressFree)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Mapping:
    if (Fn == ReleaseFn::CuMemUnmap)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::GpumemDevice:
  case MemKind::GpumemDeviceAsync:
    return ReleaseVerdict::Matches;
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
    // gpumem_free_async refuses these kinds (GPUMEM_EKIND).
    if (Fn == ReleaseFn::GpumemFree)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::Heap:
    if (Fn == ReleaseFn::Free)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::New:
    if (Fn == ReleaseFn::Delete)
      return ReleaseVerdict::Matches;
    break;
  case MemKind::NewArray:
    if (Fn == ReleaseFn::DeleteArray)
      return ReleaseVerdict::Matches;
    break;
  }
  return isStreamOrderedRelease(Fn) ? ReleaseVerdict::NotStreamOrdered
                                    : ReleaseVerdict::Mismatched;
}

StringRef expectedRelease(MemKind Kind) {
  switch (Kind) {
  case MemKind::Device:
  case MemKind::StreamOrdered:
    return "cudaFree or cudaFreeAsync";
  case MemKind::Managed:
    return "cudaFree";
  case MemKind::Pinned:
    return "cudaFreeHost";
  case MemKind::Array:
    return "cudaFreeArray";
  case MemKind::Physical:
    return "cuMemRelease";
  case MemKind::AddressRange:
    return "cuMemAddressFree";
  case MemKind::Mapping:
    return "cuMemUnmap";
  case MemKind::GpumemDevice:
  case MemKind::GpumemDeviceAsync:
    return "gpumem_free or gpumem_free_async";
  case MemKind::GpumemManaged:
  case MemKind::GpumemPinned:
  case MemKind::GpumemHost:
    return "gpumem_free";
  case MemKind::Heap:
    return "free";
  case MemKind::New:
    return "delete";
  case MemKind::NewArray:
    return "delete[]";
  }
  return "";
}

} // namespace gpumem
