// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 100;
        for (int i = 1; i < 100; i++) sum = sum + i;
        System.out.println(sum);
    }
}
