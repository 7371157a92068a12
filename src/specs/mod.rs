pub mod theory;
