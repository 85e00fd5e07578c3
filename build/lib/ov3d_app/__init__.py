"""The Streamlit app's state, cache layer and selection logic (ov3d_core stays streamlit-free)."""
