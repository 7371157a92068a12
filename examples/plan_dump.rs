use roofprobe::backend::{Backend, SizeRequest};
fn main() {
    let b = roofprobe::backend::host::HostBackend::new();
    let cases = b.cases(SizeRequest::Auto).unwrap();
    let mut by: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for p in &cases {
        by.entry(p.case.family.to_string())
            .or_default()
            .push(format!(
                "{} ({} MiB)",
                p.case.id(),
                p.case.working_set_bytes >> 20
            ));
    }
    println!("{} cases", cases.len());
    for (f, v) in by {
        println!("== {f}: {}", v.len());
        for x in v.iter().take(400) {
            println!("   {x}");
        }
    }
}
