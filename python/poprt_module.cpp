// poprt._poprt: the Python package's native part, a thin shell over the conversion library
// (converter/converter.h) and the runtime API (runtime/include/poprt/runtime). The Python side
// (python/poprt/*.py) gives it PopRT's names. Arrays cross without copies where the runtime allows:
// inputs are read in place from contiguous arrays of the anchor's dtype, outputs are handed over
// in the vectors the runtime filled. The GIL is released while a conversion or a request runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "converter/converter.h"
#include "lib/support/log.h"
#include "poprt/runtime/custom_ops.h"
#include "poprt/runtime/errors.h"
#include "poprt/runtime/model_runner.h"
#include "runtime/host_array.h"

namespace py = pybind11;
namespace rt = poprt::runtime;

namespace {

// The exception classes of poprt/errors.py, set at import.
py::object g_application_error, g_recoverable_error, g_unrecoverable_error;

[[noreturn]] void raise(const py::object& cls, const std::string& message) {
  PyErr_SetString(cls.ptr(), message.c_str());
  throw py::error_already_set();
}

// Runs `body` without the GIL and turns poprt's errors into the package's exceptions.
template <typename F>
auto withoutGil(F&& body) -> decltype(body()) {
  try {
    py::gil_scoped_release release;
    return body();
  } catch (const rt::RecoverableRuntimeError& e) {
    raise(g_recoverable_error, e.what());
  } catch (const rt::UnrecoverableRuntimeError& e) {
    raise(g_unrecoverable_error, e.what());
  } catch (const rt::ApplicationError& e) { raise(g_application_error, e.what()); } catch (const poprt::UsageError& e) {
    raise(g_application_error, e.what());
  } catch (const std::bad_alloc&) { raise(g_unrecoverable_error, "out of memory"); }
}

// ------------------------------------------------------------------------------- conversion

py::dict convert(const std::string& options_json, const std::string& input_model, const py::object& model_bytes) {
  poprt::converter::ConvertOptions o;
  if (auto st = poprt::converter::applyOptionsJson("poprt.Converter", options_json, o); !st.ok())
    raise(g_application_error, st.error().message());
  o.input_model = input_model;
  o.input_models = {input_model};
  o.write_files = false;
  if (!model_bytes.is_none()) o.model_bytes = model_bytes.cast<std::string>();
  std::ostringstream report;
  auto result = withoutGil([&] { return poprt::converter::Converter(std::move(o), {&report, nullptr}).convert(); });
  if (!result.ok()) raise(g_application_error, result.error().message());
  py::dict out;
  out["onnx"] = py::bytes(result->onnx);
  out["popef"] = py::bytes(result->popef);
  out["summary"] = result->summary;
  out["warnings"] = result->warnings;
  out["cache"] = result->cache;
  out["report"] = report.str();
  return out;
}

// --------------------------------------------------------------------------------- runtime

py::dtype dtypeOf(const rt::DataDesc& d) { return py::dtype(d.dtype == "bool" ? std::string("bool") : d.dtype); }

py::dict describe(const rt::DataDesc& d) {
  py::dict desc;
  desc["name"] = d.name;
  desc["dtype"] = d.dtype;
  desc["shape"] = d.shape;
  return desc;
}

// The runtime's checks (runtime/host_array.h) on the array as numpy describes it. `what` is
// "input" or "output".
void checkArray(const py::array& a, const rt::DataDesc& d, const char* what) {
  rt::HostArray h;
  h.dtype = py::str(a.dtype()).cast<std::string>();
  h.shape.assign(a.shape(), a.shape() + a.ndim());
  h.strides.assign(a.strides(), a.strides() + a.ndim());
  h.itemsize = a.itemsize();
  h.nbytes = a.nbytes();
  h.writeable = a.writeable();
  if (std::string why = rt::arrayMismatch(h, d, what); !why.empty()) raise(g_application_error, why);
}

class Runner;

// A request in flight: the future and the arrays it reads, alive until it is done (execute_async
// keeps the Runner alive as long as its Pending).
class Pending {
 public:
  Pending(std::future<rt::OutputMemory> f, std::vector<py::array> keep, const Runner* runner)
      : future_(std::move(f)), keep_(std::move(keep)), runner_(runner) {}
  bool done() const { return future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  py::dict result();

 private:
  std::shared_future<rt::OutputMemory> future_;
  std::vector<py::array> keep_;
  const Runner* runner_;
};

class Runner {
 public:
  Runner(const std::string& popef, const py::dict& config) {
    rt::ModelRunnerConfig c;
    for (auto [k, v] : config) {
      const std::string key = k.cast<std::string>();
      if (key == "timeout_ns")
        c.timeout_ns = v.cast<uint64_t>();
      else if (key == "request_timeout_ns")
        c.request_timeout_ns = v.cast<uint64_t>();
      else if (key == "batching_dim")
        c.batching_dim = v.cast<int>();
      else if (key == "ring_buffer_size")
        c.ring_buffer_size = v.cast<size_t>();
      else if (key == "validate_io")
        c.validate_io = v.cast<bool>();
      else if (key == "device_wait_ns")
        c.device_wait_ns = v.cast<uint64_t>();
      else if (key == "memory_limit_bytes")
        c.memory_limit_bytes = v.cast<uint64_t>();
      else
        raise(g_application_error, "RuntimeConfig: unknown option '" + key + "'");
    }
    runner_ = withoutGil([&] { return std::make_unique<rt::ModelRunner>(popef, c); });
  }

  py::list inputs() const { return descriptions(runner_->getExecuteInputs()); }
  py::list outputs() const { return descriptions(runner_->getExecuteOutputs()); }

  // Inputs by name, checked; `keep` holds the arrays until the request is done.
  rt::InputMemoryView inputView(const py::dict& arrays, std::vector<py::array>& keep) const {
    const auto& descs = runner_->getExecuteInputs();
    for (auto [k, v] : arrays) {
      const std::string name = py::str(k).cast<std::string>();
      bool known = false;
      for (const auto& d : descs) known = known || d.name == name;
      if (!known) raise(g_application_error, "input '" + name + "': the model has no such input (inputs: " + names(descs) + ")");
    }
    rt::InputMemoryView view;
    for (const auto& d : descs) {
      if (!arrays.contains(d.name)) raise(g_application_error, "input '" + d.name + "' is missing");
      py::object obj = arrays[py::str(d.name)];
      if (!py::isinstance<py::array>(obj)) raise(g_application_error, "input '" + d.name + "': expected a numpy array");
      py::array a = obj.cast<py::array>();
      checkArray(a, d, "input");
      view[d.name] = {a.data(), static_cast<size_t>(a.nbytes())};
      keep.push_back(std::move(a));
    }
    return view;
  }

  py::dict execute(const py::dict& arrays) {
    std::vector<py::array> keep;
    rt::InputMemoryView view = inputView(arrays, keep);
    rt::OutputMemory out = withoutGil([&] { return runner_->execute(view); });
    return toArrays(std::move(out));
  }

  // Outputs into the caller's arrays (each checked like an input).
  void executeInto(const py::dict& arrays, const py::dict& outputs) {
    std::vector<py::array> keep;
    rt::InputMemoryView view = inputView(arrays, keep);
    rt::OutputMemoryView out;
    for (const auto& d : runner_->getExecuteOutputs()) {
      if (!outputs.contains(d.name)) raise(g_application_error, "output '" + d.name + "' is missing");
      py::object obj = outputs[py::str(d.name)];
      if (!py::isinstance<py::array>(obj)) raise(g_application_error, "output '" + d.name + "': expected a numpy array");
      py::array a = obj.cast<py::array>();
      checkArray(a, d, "output");
      out[d.name] = {a.mutable_data(), static_cast<size_t>(a.nbytes())};
      keep.push_back(std::move(a));
    }
    withoutGil([&] { runner_->execute(view, out); });
  }

  std::shared_ptr<Pending> executeAsync(const py::dict& arrays) {
    std::vector<py::array> keep;
    rt::InputMemoryView view = inputView(arrays, keep);
    auto f = withoutGil([&] { return runner_->executeAsync(view); });
    return std::make_shared<Pending>(std::move(f), std::move(keep), this);
  }

  py::dict estimate() const {
    const rt::IpuEstimate e = runner_->estimate();
    py::dict d;
    d["cycles"] = e.cycles;
    d["clock_hz"] = e.clock_hz;
    d["seconds"] = e.seconds();
    d["batches_per_step"] = e.batches_per_step;
    d["num_ipus"] = e.num_ipus;
    return d;
  }

  unsigned replicationFactor() const { return runner_->replicationFactor(); }

  py::dict toArrays(rt::OutputMemory out) const {
    py::dict result;
    for (const auto& d : runner_->getExecuteOutputs()) {
      auto it = out.find(d.name);
      if (it == out.end()) continue;
      std::vector<uint8_t>& data = it->second.data;
      if (it->second.desc.format != rt::DataFormat::Raw) {  // a serialized proto: its bytes
        result[py::str(d.name)] = py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
        continue;
      }
      auto* owned = new std::vector<uint8_t>(std::move(data));  // the array's memory, not a copy
      py::capsule free(owned, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
      result[py::str(d.name)] = py::array(dtypeOf(d), it->second.desc.shape, owned->data(), free);
    }
    return result;
  }

 private:
  static py::list descriptions(const std::vector<rt::DataDesc>& descs) {
    py::list l;
    for (const auto& d : descs) l.append(describe(d));
    return l;
  }
  static std::string names(const std::vector<rt::DataDesc>& descs) {
    std::string s;
    for (const auto& d : descs) s += (s.empty() ? "" : ", ") + d.name;
    return s;
  }

  std::unique_ptr<rt::ModelRunner> runner_;
};

py::dict Pending::result() {
  rt::OutputMemory out = withoutGil([&] { return future_.get(); });
  return runner_->toArrays(std::move(out));
}

}  // namespace

PYBIND11_MODULE(_poprt, m) {
  m.doc() = "poprt's native part: the conversion library and the runtime (use the poprt package)";
  m.def("set_errors", [](py::object app, py::object rec, py::object unrec) {
    g_application_error = std::move(app), g_recoverable_error = std::move(rec), g_unrecoverable_error = std::move(unrec);
  });
  // Custom-op plugins, for the conversion and the runtime alike (poprt/custom_op.h).
  m.def(
      "load_custom_ops", [](const std::string& path) { withoutGil([&] { rt::loadCustomOpLibrary(path); }); }, py::arg("path"));
  m.def("convert", &convert, py::arg("options_json"), py::arg("input_model"), py::arg("model_bytes"));
  // The converter's option table: key, kind (flag, list, comma_list, int, float, str) and help,
  // for the command line poprt.cli builds.
  m.def("options", [] {
    py::list table;
    poprt::converter::ConvertOptions o;
    for (const auto& spec : poprt::converter::optionTable()) {
      std::string kind = std::visit(
          [&](auto* field) -> std::string {
            using T = std::remove_pointer_t<decltype(field)>;
            if constexpr (std::is_same_v<T, bool>)
              return "flag";
            else if constexpr (std::is_same_v<T, std::vector<std::string>>)
              return spec.comma_list ? "comma_list" : "list";
            else if constexpr (std::is_same_v<T, double>)
              return "float";
            else if constexpr (std::is_same_v<T, std::string>)
              return "str";
            else
              return "int";
          },
          spec.field(o));
      table.append(py::make_tuple(spec.key, kind, spec.help));
    }
    return table;
  });
  py::class_<Pending, std::shared_ptr<Pending>>(m, "Pending").def("done", &Pending::done).def("result", &Pending::result);
  py::class_<Runner>(m, "Runner")
      .def(py::init<const std::string&, const py::dict&>())
      .def_property_readonly("inputs", &Runner::inputs)
      .def_property_readonly("outputs", &Runner::outputs)
      .def_property_readonly("replication_factor", &Runner::replicationFactor)
      .def("execute", &Runner::execute)
      .def("execute_into", &Runner::executeInto)
      .def("execute_async", &Runner::executeAsync, py::keep_alive<0, 1>())  // the request outlives no runner
      .def("estimate", &Runner::estimate);
}
