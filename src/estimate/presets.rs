//! Built-in model shapes (each from the model's published `config.json`), and a Hugging Face
//! `config.json` read into a [`Model`].

use super::Model;
use serde_json::Value;

/// (preset, layers, hidden, heads, KV heads, FFN, vocabulary, tied embeddings, source)
type Row = (
    &'static str,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    bool,
    &'static str,
);

/// Every preset: the shape as the model's own `config.json` on Hugging Face gives it
/// (`num_hidden_layers`, `hidden_size`, `num_attention_heads`, `num_key_value_heads`,
/// `intermediate_size`, `vocab_size`, `tie_word_embeddings`); all use a gated (SwiGLU) FFN.
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
    let (name, layers, hidden, heads, kv_heads, ffn, vocab, tied, source) = *row;
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
    let int = |key: &str| -> Result<Option<u64>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("{origin}: `{key}` is {x}; expected a whole number")),
        }
    };
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
    let tied = obj
        .get("tie_word_embeddings")
        .and_then(Value::as_bool)
        .unwrap_or(false);
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
        source: origin.to_string(),
    };
    model.check().map_err(|e| format!("{origin}: {e}"))?;
    Ok(model)
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
}
