//! Python bindings (PyO3). The native module `stpreset._native` speaks SPEC §9 JSON text — the
//! documents the CLI prints, from the same library calls — and `stpreset/__init__.py` turns it
//! into dicts and typed exceptions. Rendering runs with the GIL released.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Raised as `ValueError(class, kind, message)`; the package re-raises it as its own class.
fn error(class: &str, kind: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err((class.to_string(), kind.to_string(), message.to_string()))
}

fn context(json: &str) -> PyResult<stpreset::Context> {
    stpreset::Context::from_json(json.as_bytes()).map_err(|e| error("ContextError", e.kind(), e))
}

/// A message's role as the context file spells it (`assistant` is `model`).
fn role(name: &str) -> PyResult<stpreset::Role> {
    name.parse().map_err(|e| error("ContextError", "Role", e))
}

/// The regex scripts (SPEC §13.1) as a JSON list of their fields as read.
fn scripts_json<'a>(scripts: impl IntoIterator<Item = &'a stpreset::RegexScript>) -> String {
    let list: Vec<&stpreset::RegexScript> = scripts.into_iter().collect();
    serde_json::to_string(&list).unwrap_or_default()
}

/// Text or bytes from Python: `str` is UTF-8 already; `bytes` are checked by the engine.
#[derive(FromPyObject)]
enum Text {
    Str(String),
    Bytes(Vec<u8>),
}

/// An imported preset.
#[pyclass(frozen, module = "stpreset._native")]
struct Preset {
    inner: stpreset::Preset,
}

#[pymethods]
impl Preset {
    #[staticmethod]
    fn from_json(py: Python<'_>, text: Text) -> PyResult<Preset> {
        let bytes: &[u8] = match &text {
            Text::Str(s) => s.as_bytes(),
            Text::Bytes(b) => b,
        };
        py.detach(|| stpreset::Preset::from_json(bytes))
            .map(|inner| Preset { inner })
            .map_err(|e| error("PresetError", e.kind(), e))
    }

    fn compile(&self, py: Python<'_>) -> CompiledPreset {
        let inner = py.detach(|| Arc::new(self.inner.compile()));
        CompiledPreset { inner }
    }

    /// The regex scripts as imported (SPEC §13.1), a JSON list.
    fn regex_scripts_json(&self) -> String {
        scripts_json(self.inner.regex_scripts())
    }

    fn audit_json(&self, py: Python<'_>) -> String {
        py.detach(|| self.inner.audit_json())
    }

    fn settings_json(&self) -> String {
        self.inner.settings().to_json()
    }
}

/// A compiled preset; renders from any thread.
#[pyclass(frozen, module = "stpreset._native")]
struct CompiledPreset {
    inner: Arc<stpreset::CompiledPreset>,
}

#[pymethods]
impl CompiledPreset {
    fn settings_json(&self) -> String {
        self.inner.settings().to_json()
    }

    fn render_json(&self, py: Python<'_>, context_json: &str) -> PyResult<String> {
        py.detach(|| Ok(self.inner.render(&context(context_json)?).to_json()))
    }

    /// Renders and shapes the request the context's `provider_options` ask for (SPEC §12.6).
    fn request_json(&self, py: Python<'_>, context_json: &str) -> PyResult<String> {
        py.detach(|| {
            let ctx = context(context_json)?;
            Ok(self
                .inner
                .render(&ctx)
                .to_request_json(&ctx.provider_options))
        })
    }

    /// Only the provider request body (SPEC §12.3) as UTF-8 JSON bytes, ready to POST: one
    /// copy out, no Python objects built.
    fn request_body<'py>(
        &self,
        py: Python<'py>,
        context_json: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let body = py.detach(|| {
            let ctx = context(context_json)?;
            let (request, _) = self.inner.render(&ctx).to_request(&ctx.provider_options);
            Ok::<_, PyErr>(request.to_string())
        })?;
        Ok(PyBytes::new(py, body.as_bytes()))
    }

    /// The regex scripts it runs (SPEC §13.1), a JSON list.
    fn regex_scripts_json(&self) -> String {
        scripts_json(self.inner.regex_scripts())
    }

    /// A reply or user message before the bot stores it (SPEC §13.7 store pass):
    /// `{"diagnostics", "text"}` as JSON.
    fn store_message_json(
        &self,
        py: Python<'_>,
        text: &str,
        role_name: &str,
        context_json: &str,
    ) -> PyResult<String> {
        let role = role(role_name)?;
        py.detach(|| {
            let ctx = context(context_json)?;
            Ok(self.inner.store_message(text, role, &ctx).to_json())
        })
    }

    /// An edited message (SPEC §13.7 edit pass): `{"diagnostics", "text"}` as JSON.
    #[pyo3(signature = (text, role_name, speaker, context_json))]
    fn edit_message_json(
        &self,
        py: Python<'_>,
        text: &str,
        role_name: &str,
        speaker: Option<&str>,
        context_json: &str,
    ) -> PyResult<String> {
        let role = role(role_name)?;
        py.detach(|| {
            let ctx = context(context_json)?;
            Ok(self.inner.edit_message(text, role, speaker, &ctx).to_json())
        })
    }

    /// Text shown to people (SPEC §13.7 display pass): `{"diagnostics", "text"}` as JSON.
    #[pyo3(signature = (text, role_name, depth, speaker, context_json))]
    fn display_message_json(
        &self,
        py: Python<'_>,
        text: &str,
        role_name: &str,
        depth: Option<u32>,
        speaker: Option<&str>,
        context_json: &str,
    ) -> PyResult<String> {
        let role = role(role_name)?;
        py.detach(|| {
            let ctx = context(context_json)?;
            Ok(self
                .inner
                .display_message(text, role, depth, speaker, &ctx)
                .to_json())
        })
    }

    /// The prompt pass a render runs (SPEC §13.2.3), alone: `{"diagnostics", "items"}` as JSON.
    fn prompt_pass_json(&self, py: Python<'_>, context_json: &str) -> PyResult<String> {
        py.detach(|| {
            let out = self.inner.prompt_pass(&context(context_json)?);
            // Keys in byte order, as the library's documents.
            Ok(format!(
                "{{\"diagnostics\":{},\"items\":{}}}",
                serde_json::to_string(&out.diagnostics).unwrap_or_default(),
                serde_json::to_string(&out.items).unwrap_or_default()
            ))
        })
    }

    /// The render document as dicts and lists, built from the same `Serialize`
    /// implementation as the JSON text (no text in between).
    fn render<'py>(&self, py: Python<'py>, context_json: &str) -> PyResult<Bound<'py, PyAny>> {
        let ctx = py.detach(|| context(context_json))?;
        // The result borrows the context's text: it is turned into Python objects directly.
        let out = py.detach(|| self.inner.render(&ctx));
        Ok(pythonize::pythonize(py, &out)?)
    }
}

/// A compiled template.
#[pyclass(frozen, module = "stpreset._native")]
struct Template {
    inner: stpreset::Template,
}

#[pymethods]
impl Template {
    #[new]
    fn new(py: Python<'_>, source: Text) -> PyResult<Template> {
        let inner = py.detach(|| match &source {
            Text::Str(s) => Ok(stpreset::Template::compile(s)),
            Text::Bytes(b) => stpreset::Template::from_bytes(b),
        });
        inner
            .map(|inner| Template { inner })
            .map_err(|e| error("TemplateError", e.kind(), e))
    }

    fn render_json(&self, py: Python<'_>, context_json: &str) -> PyResult<String> {
        py.detach(|| Ok(self.inner.render(&context(context_json)?).to_json()))
    }
}

/// Loads a tokenizer's vocabulary now (`auto`: both `o200k` and `cl100k`; `approx` and `words`
/// load nothing), with the GIL released, so the first budgeted render does not pay for it.
#[pyfunction]
fn preload_tokenizer(py: Python<'_>, name: &str) -> PyResult<()> {
    let tokenizer: stpreset::Tokenizer = name.parse().map_err(PyValueError::new_err)?;
    py.detach(|| tokenizer.preload());
    Ok(())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(preload_tokenizer, m)?)?;
    m.add_class::<Preset>()?;
    m.add_class::<CompiledPreset>()?;
    m.add_class::<Template>()?;
    Ok(())
}
