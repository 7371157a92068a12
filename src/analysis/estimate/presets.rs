//! Built-in model shapes (each from the model's published `config.json`), and a Hugging Face
//! `config.json` read into a [`Model`].

use super::Model;
use serde_json::Value;

/// (preset, layers, hidden, heads, KV heads, FFN, vocabulary, tied embeddings, sliding window
/// of every layer, context (`max_position_embeddings`), source)
type Row = (
    &'static str,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    bool,
    Option<u64>,
    u64,
    &'static str,
);

/// Every preset: the shape as the model's own `config.json` on Hugging Face gives it
/// (`num_hidden_layers`, `hidden_size`, `num_attention_heads`, `num_key_value_heads`,
/// `intermediate_size`, `vocab_size`, `tie_word_embeddings`, `sliding_window`,
/// `max_position_embeddings`); all use a gated
/// (SwiGLU) FFN.
const PRESETS: [Row; 5] = [
    (
        "llama-2-7b",
        32,
        4096,
        32,
        32,
        11008,
        32000,
        false,
        None,
        4096,
        "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
    ),
    (
        "llama-3.1-8b",
        32,
        4096,
        32,
        8,
        14336,
        128256,
        false,
        None,
        131072,
        "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json",
    ),
    (
        "llama-3.1-70b",
        80,
        8192,
        64,
        8,
        28672,
        128256,
        false,
        None,
        131072,
        "https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json",
    ),
    (
        "mistral-7b-v0.1",
        32,
        4096,
        32,
        8,
        14336,
        32000,
        false,
        Some(4096),
        32768,
        "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
    ),
    (
        "qwen2.5-7b",
        28,
        3584,
        28,
        4,
        18944,
        152064,
        false,
        None,
        131072,
        "https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json",
    ),
];

/// The presets' names, for help and errors.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|r| r.0).collect()
}

/// A preset by name (case-insensitive); an unknown name is an error listing them.
pub fn find(name: &str) -> Result<Model, String> {
    let row = PRESETS
        .iter()
        .find(|r| r.0.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            format!(
                "no preset `{name}`; the presets are: {} (or give --config FILE or the shape)",
                names().join(", ")
            )
        })?;
    let (name, layers, hidden, heads, kv_heads, ffn, vocab, tied, window, context, source) = *row;
    Ok(Model {
        name: name.to_string(),
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: hidden / heads,
        ffn,
        gated_ffn: true,
        vocab,
        tied_embeddings: tied,
        sliding_window: window,
        window_layers: if window.is_some() { layers } else { 0 },
        max_context_tokens: Some(context),
        source: source.to_string(),
    })
}

/// Model types whose FFN is gated (gate, up and down projections), as their Transformers
/// modelling code builds it.
const GATED: [&str; 9] = [
    "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "olmo2", "granite",
];

/// Reads a Hugging Face `config.json` of a dense decoder (Llama layout). Errors say which key is
/// missing or wrong; mixture-of-experts configs are refused (not modelled).
pub fn from_hf_config(origin: &str, text: &str) -> Result<Model, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!("{origin}: not valid JSON ({e}); expected a Hugging Face config.json")
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{origin}: expected a JSON object (a Hugging Face config.json)"))?;
    for moe in ["num_local_experts", "num_experts", "n_routed_experts"] {
        if obj.contains_key(moe) {
            return Err(format!(
                "{origin}: `{moe}` says this is a mixture-of-experts model, which estimate does \
                 not model (dense decoders only)"
            ));
        }
    }
    let int = |key: &str| whole_number(origin, obj, key);
    let need = |key: &str| -> Result<u64, String> {
        int(key)?.ok_or_else(|| {
            format!(
                "{origin}: no `{key}`; expected a decoder's config.json with num_hidden_layers, \
                 hidden_size, num_attention_heads, intermediate_size and vocab_size"
            )
        })
    };
    let layers = need("num_hidden_layers")?;
    let hidden = need("hidden_size")?;
    let heads = need("num_attention_heads")?;
    let ffn = need("intermediate_size")?;
    let vocab = need("vocab_size")?;
    let kv_heads = int("num_key_value_heads")?.unwrap_or(heads);
    let head_dim = match int("head_dim")? {
        Some(d) => d,
        None => hidden.checked_div(heads).unwrap_or(0),
    };
    let model_type = obj.get("model_type").and_then(Value::as_str).unwrap_or("");
    let flag = |key: &str| -> Result<Option<bool>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_bool()
                .map(Some)
                .ok_or_else(|| format!("{origin}: `{key}` is {x}; expected true or false")),
        }
    };
    // absent, the model class's default, as Transformers reads the file
    let tied = flag("tie_word_embeddings")?.unwrap_or(!UNTIED_BY_DEFAULT.contains(&model_type));
    let (sliding_window, window_layers) = sliding_window(origin, obj, model_type, layers)?;
    let name = obj
        .get("_name_or_path")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(origin)
        .to_string();
    let model = Model {
        name,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn,
        gated_ffn: GATED.contains(&model_type),
        vocab,
        tied_embeddings: tied,
        sliding_window,
        window_layers,
        max_context_tokens: int("max_position_embeddings")?.filter(|&n| n > 0),
        source: origin.to_string(),
    };
    model.check().map_err(|e| format!("{origin}: {e}"))?;
    Ok(model)
}

/// A config's whole-number `key`: None where it is absent or null, an error naming it where it
/// is something else.
fn whole_number(
    origin: &str,
    obj: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{origin}: `{key}` is {x}; expected a whole number")),
    }
}

/// Model types whose Transformers configuration class defaults `tie_word_embeddings` to false;
/// every other class keeps `PretrainedConfig`'s true (Gemma's, GPT-2's). A `config.json` saved
/// by Transformers leaves the key out where it equals those defaults.
const UNTIED_BY_DEFAULT: [&str; 8] = [
    "llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "granite", "gpt_neox",
];

/// Which layers attend through a sliding window, and its size, as Transformers builds them from
/// the config: `layer_types` where the file lists them (`sliding_attention` or
/// `full_attention`); else, where `sliding_window` is set, Qwen2/3's layers from
/// `max_window_layers` on (only with `use_sliding_window`), Gemma 2's every other layer (the
/// first of each pair), Gemma 3's all but every `sliding_window_pattern`-th (6), and every
/// layer for the others (Mistral, Phi-3).
fn sliding_window(
    origin: &str,
    obj: &serde_json::Map<String, Value>,
    model_type: &str,
    layers: u64,
) -> Result<(Option<u64>, u64), String> {
    let int = |key: &str| whole_number(origin, obj, key);
    let window = int("sliding_window")?.filter(|&w| w > 0);
    let use_window = obj.get("use_sliding_window").and_then(Value::as_bool);
    let windowed = if let Some(types) = obj.get("layer_types").filter(|v| !v.is_null()) {
        let types = types.as_array().ok_or_else(|| {
            format!("{origin}: `layer_types` is {types}; expected a list of layer types")
        })?;
        if types.len() as u64 != layers {
            return Err(format!(
                "{origin}: `layer_types` lists {} layers, `num_hidden_layers` says {layers}",
                types.len()
            ));
        }
        let mut windowed = 0;
        for t in types {
            match t.as_str() {
                Some("full_attention") => {}
                Some("sliding_attention") => windowed += 1,
                _ => {
                    return Err(format!(
                        "{origin}: layer type {t} is not modelled (estimate takes \
                         `full_attention` and `sliding_attention` layers)"
                    ))
                }
            }
        }
        if windowed > 0 && window.is_none() {
            return Err(format!(
                "{origin}: {windowed} layers are `sliding_attention` but `sliding_window` gives \
                 no window"
            ));
        }
        windowed
    } else if window.is_none() || use_window == Some(false) {
        0
    } else {
        match model_type {
            // Qwen2Config: the window only with use_sliding_window (false by default), from
            // layer max_window_layers (28 by default) on
            "qwen2" | "qwen3" if use_window != Some(true) => 0,
            "qwen2" | "qwen3" => layers.saturating_sub(int("max_window_layers")?.unwrap_or(28)),
            // layers 0, 2, 4, … slide
            "gemma2" => layers.div_ceil(2),
            "gemma3" | "gemma3_text" => {
                let pattern = int("sliding_window_pattern")?.unwrap_or(6).max(1);
                layers - layers / pattern
            }
            _ => layers,
        }
    };
    Ok((window.filter(|_| windowed > 0), windowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_their_published_sizes() {
        // billions of parameters as the model cards round them
        for (name, billions) in [
            ("llama-2-7b", 6.74),
            ("llama-3.1-8b", 8.03),
            ("llama-3.1-70b", 70.55),
            ("mistral-7b-v0.1", 7.24),
            ("qwen2.5-7b", 7.62),
        ] {
            let m = find(name).unwrap();
            m.check().unwrap();
            let b = m.params() / 1e9;
            assert!((b - billions).abs() < 0.01, "{name}: {b}");
        }
        assert!(find("LLaMA-3.1-8B").is_ok());
        let e = find("gpt-5").unwrap_err();
        assert!(
            e.starts_with("no preset `gpt-5`; the presets are: llama-2-7b, "),
            "{e}"
        );
    }

    #[test]
    fn a_hf_config_reads_as_its_preset() {
        let text = r#"{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
            "vocab_size": 128256, "tie_word_embeddings": false, "rope_theta": 500000.0}"#;
        let m = from_hf_config("config.json", text).unwrap();
        assert_eq!(m.params(), find("llama-3.1-8b").unwrap().params());
        let err = |t: &str| from_hf_config("c.json", t).unwrap_err();
        assert!(err("{").starts_with("c.json: not valid JSON"));
        assert!(err(r#"{"hidden_size": 10}"#).starts_with("c.json: no `num_hidden_layers`"));
        assert_eq!(
            err(&text.replace("\"hidden_size\": 4096", "\"hidden_size\": \"big\"")),
            "c.json: `hidden_size` is \"big\"; expected a whole number"
        );
        assert!(
            err(&text.replace("\"rope_theta\"", "\"num_local_experts\": 8, \"x\""))
                .contains("mixture-of-experts")
        );
        assert!(
            err(&text.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 7"))
                .contains("multiple of KV heads")
        );
    }

    /// A config without `tie_word_embeddings` takes its class's default, as Transformers does:
    /// google/gemma-2b's published config.json has no such key, and Gemma ties (2,506,172,416
    /// parameters); a Llama-class one left without it is untied.
    #[test]
    fn an_absent_tie_takes_the_model_classs_default() {
        let gemma_2b = r#"{"architectures": ["GemmaForCausalLM"], "head_dim": 256,
            "hidden_size": 2048, "intermediate_size": 16384, "model_type": "gemma",
            "num_attention_heads": 8, "num_hidden_layers": 18, "num_key_value_heads": 1,
            "vocab_size": 256000}"#;
        let m = from_hf_config("gemma-2b.json", gemma_2b).unwrap();
        assert!(m.tied_embeddings);
        // 18 × (2048 × 2048 + 2 × 2048 × 256 + 2048 × 2048 + 3 × 2048 × 16384 + 2 × 2048)
        // + 256000 × 2048 + 2048
        assert_eq!(m.params(), 2_506_172_416.0);
        let llama = gemma_2b.replace("\"gemma\"", "\"llama\"");
        assert!(!from_hf_config("c.json", &llama).unwrap().tied_embeddings);
        let unknown = gemma_2b.replace("\"gemma\"", "\"somethingnew\"");
        assert!(from_hf_config("c.json", &unknown).unwrap().tied_embeddings);
        let said = gemma_2b.replace(
            "\"vocab_size\"",
            "\"tie_word_embeddings\": false, \"vocab_size\"",
        );
        assert!(!from_hf_config("c.json", &said).unwrap().tied_embeddings);
    }

    /// Sliding windows as Transformers builds them from a config.
    #[test]
    fn a_sliding_window_applies_to_the_layers_the_config_gives_it() {
        let base = |extra: &str, model_type: &str| {
            format!(
                r#"{{"model_type": "{model_type}", "num_hidden_layers": 32, "hidden_size": 4096,
                "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                "vocab_size": 32000{extra}}}"#
            )
        };
        let read = |extra: &str, model_type: &str| {
            let m = from_hf_config("c.json", &base(extra, model_type))?;
            Ok::<_, String>((m.sliding_window, m.window_layers))
        };
        // Mistral 7B v0.1: every layer, 4096 tokens, as the preset has it
        let mistral = read(r#", "sliding_window": 4096"#, "mistral").unwrap();
        assert_eq!(mistral, (Some(4096), 32));
        let preset = find("mistral-7b-v0.1").unwrap();
        assert_eq!((preset.sliding_window, preset.window_layers), mistral);
        assert_eq!(
            read(r#", "sliding_window": null"#, "mistral"),
            Ok((None, 0))
        );
        // Qwen2.5 ships "sliding_window": 131072 with "use_sliding_window": false
        let qwen = r#", "sliding_window": 131072, "use_sliding_window": false"#;
        assert_eq!(read(qwen, "qwen2"), Ok((None, 0)));
        assert_eq!(read(r#", "sliding_window": 4096"#, "qwen2"), Ok((None, 0)));
        let on = r#", "sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 28"#;
        assert_eq!(read(on, "qwen2"), Ok((Some(4096), 4)));
        assert_eq!(
            read(r#", "sliding_window": 4096"#, "gemma2"),
            Ok((Some(4096), 16))
        );
        // Gemma 3: five sliding layers in six
        let gemma3 = r#", "sliding_window": 1024, "sliding_window_pattern": 6"#;
        assert_eq!(read(gemma3, "gemma3_text"), Ok((Some(1024), 27)));
        // an explicit list wins
        let mut types = vec!["\"full_attention\""; 30];
        types.extend(["\"sliding_attention\""; 2]);
        let listed = format!(
            r#", "sliding_window": 512, "layer_types": [{}]"#,
            types.join(",")
        );
        assert_eq!(read(&listed, "gemma2"), Ok((Some(512), 2)));
        let e = read(&listed.replace("\"full_attention\",", ""), "gemma2").unwrap_err();
        assert_eq!(
            e,
            "c.json: `layer_types` lists 2 layers, `num_hidden_layers` says 32"
        );
        let e = read(&listed.replace("512", "null"), "gemma2").unwrap_err();
        assert!(e.contains("gives no window"), "{e}");
        let e = read(&listed.replace("full_attention", "chunked_attention"), "x").unwrap_err();
        assert!(e.contains("is not modelled"), "{e}");
    }
}
